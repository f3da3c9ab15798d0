//! Command-line surface: `serve` and the client verbs, noun/verb style.
//!
//! The client verbs (`send`, `run`, `answer`, `tasks …`) are JSON-RPC clients of a running
//! daemon. Data goes to stdout, diagnostics to stderr; `--json` swaps the
//! human form for the raw JSON the daemon answered.

mod answer;
mod chat;
mod check;
mod client;
mod completions;
mod events;
pub mod exit;
mod init;
mod ops;
mod output;
mod progress;
mod remind;
mod run;
mod send;
mod tasks;
mod token;

use crate::config::{self, ServeFlags};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[cfg(all(feature = "jemalloc", not(feature = "count-allocs")))]
macro_rules! allocator {
    () => {
        "jemalloc"
    };
}
#[cfg(feature = "count-allocs")]
macro_rules! allocator {
    () => {
        "system, counted"
    };
}
#[cfg(not(any(feature = "jemalloc", feature = "count-allocs")))]
macro_rules! allocator {
    () => {
        "system"
    };
}
/// `agentd --version` names the allocator the build links (the cargo feature
/// `jemalloc` changes it), so an operator can tell which build runs.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (allocator: ", allocator!(), ")");

#[derive(Parser, Debug)]
#[command(
    name = "agentd",
    version = VERSION,
    about = "An AI agent daemon served over A2A 1.0",
    arg_required_else_help = true,
    after_help = "Exit codes: 0 done (the task completed or waits for input), 1 error, 2 usage, \
                  3 daemon unreachable, 4 task FAILED, 5 task REJECTED, 6 task CANCELED, \
                  7 TLS (the daemon's certificate not trusted, or a client certificate needed or refused)."
)]
pub struct Cli {
    /// Print the schema bundle of one of agentd's extensions and exit
    /// (`task-annotations`, `events`, `reminders`).
    #[arg(long, value_name = "NAME", exclusive = true)]
    pub extension_schema: Option<String>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The command line: [`Cli::parse`] as clap reads it, but for `agentd
/// serve …`, which is read by a parser that knows the `serve` subcommand
/// alone. clap builds the definition of every argument of every
/// subcommand before it parses; for a daemon, whose start-up code stays
/// resident for its life, that was 170 KiB of code run once to define
/// arguments it never reads. `agentd serve --help` and every
/// error are the same either way (`cli.rs` in the suite compares them
/// with `agentd help serve`).
pub fn parse() -> Cli {
    if std::env::args_os().nth(1).is_some_and(|a| a == "serve") {
        let ServeOnly { command: ServeCommand::Serve(flags) } = ServeOnly::parse();
        return Cli { extension_schema: None, command: Some(Command::Serve(flags)) };
    }
    Cli::parse()
}

/// What `agentd serve` is, in both parsers' help.
const SERVE_ABOUT: &str = "Run the daemon (defaults: 127.0.0.1:7420, data in ./.agentd, the echo agent)";

/// `agentd serve …`: the same command name, version and `serve` subcommand
/// as [`Cli`], with nothing else.
#[derive(Parser, Debug)]
#[command(name = "agentd", version = VERSION)]
struct ServeOnly {
    #[command(subcommand)]
    command: ServeCommand,
}

#[derive(Subcommand, Debug)]
enum ServeCommand {
    #[command(about = SERVE_ABOUT)]
    Serve(ServeFlags),
}

#[derive(Subcommand, Debug)]
pub enum Command {
    #[command(about = SERVE_ABOUT)]
    Serve(ServeFlags),
    /// Write a starter instruction document (agent.md) and config (agentd.yaml).
    Init(init::InitArgs),
    /// Send a message to the agent and print its reply.
    Send(send::SendArgs),
    /// Talk with the agent in one conversation, line by line.
    Chat(chat::ChatArgs),
    /// The daemon's version, uptime, live tasks, model and who you are.
    Status(ops::StatusArgs),
    /// List, inspect, cancel and watch tasks.
    #[command(subcommand)]
    Tasks(tasks::TasksCommand),
    /// Start a workflow run and print it as it goes.
    Run(run::RunArgs),
    /// Answer a task waiting for input (a human gate): JSON as data, else text.
    Answer(answer::AnswerArgs),
    /// The open gates addressed to you on others' tasks (yours are in `tasks list`).
    Gates(ops::GatesArgs),
    /// Give a running task a reminder its model sees at its next model call(s).
    Remind(remind::RemindArgs),
    /// Check an instruction document: refusals, block tree (--tree) or delivered text (--delivery).
    Check(check::CheckArgs),
    /// Print the daemon's events feed as it happens (agentd.events/SubscribeToEvents).
    Events(events::EventsArgs),
    /// Spawn, steer, inspect and kill subagents.
    #[command(subcommand)]
    Subagents(ops::SubagentsCommand),
    /// Read or close conversations.
    #[command(subcommand)]
    Conversations(ops::ConversationsCommand),
    /// Inspect, cancel or signal workflow runs (start one with `agentd run`).
    #[command(subcommand)]
    Workflows(ops::WorkflowsCommand),
    /// Make bearer tokens for the daemon's `auth.tokens`.
    #[command(subcommand)]
    Token(token::TokenCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(completions::CompletionsArgs),
}

/// Options shared by every client verb.
#[derive(Args, Clone)]
pub struct ClientOpts {
    /// Base URL of the daemon.
    #[arg(long, env = "AGENTD_URL", default_value = "http://127.0.0.1:7420", value_name = "URL")]
    pub url: String,
    /// Bearer token for a protected daemon (never printed).
    #[arg(long, env = "AGENTD_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,
    /// PEM CA certificate(s) to trust for an https daemon, besides the system's roots.
    #[arg(long, env = "AGENTD_CA_CERT", value_name = "FILE", value_parser = path_or_empty())]
    pub ca_cert: Option<PathBuf>,
    /// PEM client certificate for a daemon that requires mutual TLS (with --client-key).
    #[arg(long, env = "AGENTD_CLIENT_CERT", value_name = "FILE", value_parser = path_or_empty())]
    pub client_cert: Option<PathBuf>,
    /// PEM private key of --client-cert.
    #[arg(long, env = "AGENTD_CLIENT_KEY", value_name = "FILE", value_parser = path_or_empty())]
    pub client_key: Option<PathBuf>,
    /// Print the raw JSON the daemon answered instead of the human form.
    #[arg(long)]
    pub json: bool,
}

/// A path, where an empty one (an exported but empty variable) is taken
/// and later counts as unset, as an empty AGENTD_TOKEN does.
fn path_or_empty() -> impl clap::builder::TypedValueParser<Value = PathBuf> {
    use clap::builder::TypedValueParser;
    clap::builder::OsStringValueParser::new().map(PathBuf::from)
}

/// Written by hand so that a debug print can never show the token.
impl std::fmt::Debug for ClientOpts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOpts")
            .field("url", &self.url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("ca_cert", &self.ca_cert)
            .field("client_cert", &self.client_cert)
            .field("client_key", &self.client_key)
            .field("json", &self.json)
            .finish()
    }
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    if let Some(name) = cli.extension_schema {
        return print_schema(&name);
    }
    let Some(command) = cli.command else {
        anyhow::bail!("give a command (agentd --help lists them)");
    };
    match command {
        // Each its own boxed future: a daemon's start-up runs none of the
        // client verbs' code (`client`'s future holds all of them).
        Command::Serve(flags) => Box::pin(serve(flags)).await,
        other => Box::pin(client(other)).await,
    }
}

async fn serve(flags: ServeFlags) -> anyhow::Result<()> {
    // `agentd init` then `agentd serve` in the same directory would
    // run the built-in agent, not the one just written: say so.
    if flags.config.is_none() && std::path::Path::new(init::CONFIG_FILE).is_file() {
        output::note(&format!(
            "agentd: ./{f} is not read without --config: agentd serve --config {f} runs it",
            f = init::CONFIG_FILE
        ));
    }
    let cfg = config::load(&flags)?;
    crate::serve::run(cfg).await
}

/// The client verbs and the local commands.
async fn client(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Serve(flags) => Box::pin(serve(flags)).await,
        Command::Init(args) => init::run(args),
        Command::Send(args) => send::run(args).await,
        Command::Chat(args) => chat::run(args).await,
        Command::Status(args) => ops::status(args).await,
        Command::Subagents(cmd) => ops::subagents(cmd).await,
        Command::Conversations(cmd) => ops::conversations(cmd).await,
        Command::Workflows(cmd) => ops::workflows(cmd).await,
        Command::Gates(args) => ops::gates(args).await,
        Command::Token(cmd) => token::run(cmd),
        Command::Completions(args) => completions::run(args),
        Command::Tasks(cmd) => tasks::run(cmd).await,
        Command::Run(args) => run::run(args).await,
        Command::Answer(args) => answer::run(args).await,
        Command::Remind(args) => remind::run(args).await,
        Command::Check(args) => check::run(args),
        Command::Events(args) => events::run(args).await,
    }
}

/// `agentd --extension-schema <name>`: the bundle generated from the Rust
/// types, byte for byte what `docs/ext/<name>/schema.json` publishes.
fn print_schema(name: &str) -> anyhow::Result<()> {
    use agentd_proto::ext::schema;
    let Some(bundle) = schema::bundle(name) else {
        anyhow::bail!("no extension schema {name:?}; known: {}", schema::names().join(", "));
    };
    output::emit(&agentd_server::ext_docs::pretty(&bundle))
}
