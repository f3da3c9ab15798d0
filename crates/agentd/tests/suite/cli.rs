//! The client verbs of the `agentd` binary (`send`, `tasks …`) against a
//! real daemon: what they print on stdout and stderr, and their exit codes.

mod approval;
mod chat;
mod exit_codes;
mod first_hour;
mod tls;
use crate::common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const WITHIN: Duration = Duration::from_secs(60);

#[derive(Debug)]
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// The variables the client reads besides its flags: cleared so that the
/// environment the tests run in cannot change what they see.
const CLIENT_VARS: &[&str] = &[
    "AGENTD_URL",
    "AGENTD_TOKEN",
    "AGENTD_CA_CERT",
    "AGENTD_CLIENT_CERT",
    "AGENTD_CLIENT_KEY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// `agentd ARGS --url URL` with the client's variables cleared, plus `env`.
fn agentd_cmd(url: &str, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentd"));
    cmd.args(args).arg("--url").arg(url);
    for var in CLIENT_VARS {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

fn agentd_env(url: &str, args: &[&str], env: &[(&str, &str)]) -> Out {
    let child = agentd_cmd(url, args, env).spawn().expect("spawn agentd");
    wait_output(child, WITHIN)
}

fn agentd(url: &str, args: &[&str]) -> Out {
    agentd_env(url, args, &[])
}

fn read_all(r: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut r) = r {
            let _ = r.read_to_string(&mut s);
        }
        s
    })
}

fn wait_exit(child: &mut Child, within: Duration) -> i32 {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status.code().unwrap_or(-1);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("agentd did not exit within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_output(mut child: Child, within: Duration) -> Out {
    let out = read_all(child.stdout.take());
    let err = read_all(child.stderr.take());
    let code = wait_exit(&mut child, within);
    Out { code, stdout: out.join().unwrap(), stderr: err.join().unwrap() }
}

/// Asserts success and returns stdout.
fn ok(out: Out) -> Out {
    assert_eq!(out.code, 0, "agentd failed: {out:?}");
    out
}

fn json_of(out: &Out) -> Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {out:?}"))
}

/// Sends a message on the tck profile and returns the task (as JSON).
fn tck_task(url: &str, prefix: &str) -> Value {
    let id = uniq(prefix);
    let out = ok(agentd(url, &["send", "--json", "--message-id", &id, "hello"]));
    json_of(&out)["task"].clone()
}

/// An operator tells a `--features jemalloc` build from the default one by
/// its version line.
#[test]
fn the_version_names_the_allocator_the_build_links() {
    let out = Command::new(env!("CARGO_BIN_EXE_agentd")).arg("--version").output().expect("agentd runs");
    assert!(out.status.success(), "{out:?}");
    let allocator = if cfg!(feature = "count-allocs") {
        "system, counted"
    } else if cfg!(feature = "jemalloc") {
        "jemalloc"
    } else {
        "system"
    };
    let want = format!("agentd {} (allocator: {allocator})\n", env!("CARGO_PKG_VERSION"));
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
}

/// The binary defines the few C math functions it calls (`agentd-glibc`),
/// so glibc's libm, half a MiB of an idle daemon's memory, is not loaded. A
/// dependency that starts calling another libm function fails this: that
/// function belongs in `agentd-glibc` too.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_binary_does_not_load_libm() {
    // glibc's loader, asked to trace, lists what it loads and exits before main.
    let out = Command::new(env!("CARGO_BIN_EXE_agentd"))
        .env("LD_TRACE_LOADED_OBJECTS", "1")
        .output()
        .expect("the loader runs");
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && listed.contains("libc.so.6"), "the loader lists the libraries: {out:?}");
    assert!(!listed.contains("libm.so"), "libm is loaded:\n{listed}");
}

/// `agentd serve …` is read by a parser of its own (`cli::parse`): what it
/// prints is what the whole command line's parser prints for `serve`.
#[test]
fn serve_is_read_as_the_whole_command_line_reads_it() {
    let run =
        |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_agentd")).args(args).output().expect("agentd runs");
    let own = run(&["serve", "--help"]);
    let whole = run(&["help", "serve"]);
    assert!(own.status.success() && whole.status.success(), "{own:?} {whole:?}");
    assert!(String::from_utf8_lossy(&own.stdout).contains("--listen"), "{own:?}");
    assert_eq!(String::from_utf8_lossy(&own.stdout), String::from_utf8_lossy(&whole.stdout));
    let refused = run(&["serve", "--no-such-flag"]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("'--no-such-flag'") && err.contains("Usage: agentd serve"), "{err}");
}

#[test]
fn send_prints_the_reply_and_the_task_on_stderr() {
    let d = Daemon::start(&[]);
    let out = ok(agentd(&d.url, &["send", "hello"]));
    assert_eq!(out.stdout, "echo: hello\n");
    assert!(out.stderr.starts_with("task ") && out.stderr.contains(": COMPLETED"), "{out:?}");

    // Several words are one message.
    let out = ok(agentd(&d.url, &["send", "hello", "there"]));
    assert_eq!(out.stdout, "echo: hello there\n");

    // `-` reads the message from stdin, without its final newline.
    let mut cmd = agentd_cmd(&d.url, &["send", "-"], &[]);
    let mut child = cmd.stdin(Stdio::piped()).spawn().expect("spawn agentd");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"from stdin\n").unwrap();
    let out = ok(wait_output(child, WITHIN));
    assert_eq!(out.stdout, "echo: from stdin\n");

    let out = ok(agentd(&d.url, &["send", "--json", "hello"]));
    let v = json_of(&out);
    assert_eq!(v["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
    assert!(out.stderr.is_empty(), "--json keeps stderr quiet: {out:?}");

    // The context carries on.
    let ctx = v["task"]["contextId"].as_str().unwrap().to_owned();
    let out = ok(agentd(&d.url, &["send", "--json", "--context", &ctx, "again"]));
    assert_eq!(json_of(&out)["task"]["contextId"], ctx.as_str());
}

#[test]
fn send_streams_deltas_and_no_wait_returns_at_once() {
    let d = Daemon::start(&[]);
    let out = ok(agentd(&d.url, &["send", "--stream", "hello stream"]));
    assert_eq!(out.stdout, "echo: hello stream\n");
    assert!(out.stderr.contains(": COMPLETED"), "{out:?}");

    let out = ok(agentd(&d.url, &["send", "--stream", "--json", "hi"]));
    let events: Vec<Value> =
        out.stdout.lines().map(|l| serde_json::from_str(l).expect("one JSON event per line")).collect();
    assert!(events.iter().any(|e| kind(e) == "artifactUpdate"), "{events:?}");
    assert_eq!(events.last().and_then(|e| state(e)), Some("TASK_STATE_COMPLETED"), "{events:?}");

    let out = ok(agentd(&d.url, &["send", "--no-wait", "--json", "later"]));
    let task = json_of(&out)["task"].clone();
    let id = task["id"].as_str().expect("task id");
    let out = ok(agentd(&d.url, &["tasks", "get", id, "--json"]));
    assert_eq!(json_of(&out)["id"], id);

    // --stream and --no-wait do not go together: a usage error.
    let out = agentd(&d.url, &["send", "--stream", "--no-wait", "x"]);
    assert_eq!(out.code, 2, "{out:?}");
}

#[test]
fn send_prints_a_direct_message_reply() {
    let d = Daemon::start(&["--agent", "tck"]);
    let id = uniq("tck-message-response");
    let out = ok(agentd(&d.url, &["send", "--message-id", &id, "hi"]));
    assert_eq!(out.stdout, "Direct message response\n");
}

#[test]
fn tasks_list_and_get() {
    let d = Daemon::start(&[]);
    let a = json_of(&ok(agentd(&d.url, &["send", "--json", "one"])))["task"].clone();
    let b = json_of(&ok(agentd(&d.url, &["send", "--json", "two"])))["task"].clone();
    let (a_id, b_id) = (a["id"].as_str().unwrap(), b["id"].as_str().unwrap());

    // A header, then one line per task, newest first, with the start of its reply.
    let out = ok(agentd(&d.url, &["tasks", "list"]));
    let lines: Vec<&str> = out.stdout.lines().collect();
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(header, ["ID", "STATE", "UPDATED", "CONTEXT", "TEXT"], "{out:?}");
    assert!(lines[1].starts_with(b_id) && lines[2].starts_with(a_id), "newest first: {out:?}");
    let cols: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(cols.len(), 6, "id  state  updated  contextId  text: {}", lines[2]);
    assert_eq!(cols[1], "COMPLETED");
    assert_eq!(cols[2], a["status"]["timestamp"].as_str().unwrap());
    assert_eq!(cols[3], a["contextId"].as_str().unwrap());
    assert_eq!(cols[4..], ["echo:", "one"], "the reply's text: {}", lines[2]);
    let at = lines[0].rfind("TEXT").unwrap();
    assert_eq!(&lines[2][at..], "echo: one", "columns line up under the header: {out:?}");

    // Filters: by state (short or full name) and by context.
    let out = ok(agentd(&d.url, &["tasks", "list", "--state", "completed"]));
    assert_eq!(out.stdout.lines().count(), 3, "{out:?}");
    let out = ok(agentd(&d.url, &["tasks", "list", "--state", "TASK_STATE_WORKING"]));
    assert_eq!(out.stdout, "", "no header without tasks: {out:?}");
    assert_eq!(out.stderr, "no tasks\n", "{out:?}");
    let out = ok(agentd(&d.url, &["tasks", "list", "--context", b["contextId"].as_str().unwrap()]));
    assert_eq!(out.stdout.lines().count(), 2, "{out:?}");
    assert!(out.stdout.lines().nth(1).unwrap().starts_with(b_id), "{out:?}");

    // One page, with a hint; --all follows the page token.
    let out = ok(agentd(&d.url, &["tasks", "list", "--page-size", "1"]));
    assert_eq!(out.stdout.lines().count(), 2, "{out:?}");
    assert!(out.stderr.contains("--all"), "{out:?}");
    let out = ok(agentd(&d.url, &["tasks", "list", "--page-size", "1", "--all"]));
    assert_eq!(out.stdout.lines().count(), 3, "one header for every page: {out:?}");
    assert!(out.stdout.contains(a_id) && out.stdout.contains(b_id), "{out:?}");
    let v = json_of(&ok(agentd(&d.url, &["tasks", "list", "--page-size", "1", "--all", "--json"])));
    assert_eq!(v["tasks"].as_array().map(Vec::len), Some(2), "{v}");
    assert_eq!(v["nextPageToken"], "");

    // get: labelled lines, then the reply; the task as JSON with --json.
    let out = ok(agentd(&d.url, &["tasks", "get", a_id]));
    let ts = a["status"]["timestamp"].as_str().unwrap();
    let ctx = a["contextId"].as_str().unwrap();
    assert_eq!(
        out.stdout,
        format!(
            "task     {a_id}\nstate    COMPLETED since {ts}\ncontext  {ctx}\n\
             holds    1 artifact(s), 2 message(s) of history\n\necho: one\n"
        ),
        "{out:?}"
    );
    let out = ok(agentd(&d.url, &["tasks", "get", a_id, "--json"]));
    let t = json_of(&out);
    assert_eq!(t["id"], a_id);
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(out.stdout.contains("\n  \"id\""), "pretty JSON: {out:?}");
    let t = json_of(&ok(agentd(&d.url, &["tasks", "get", a_id, "--history", "0", "--json"])));
    assert!(t["history"].as_array().is_none_or(Vec::is_empty), "{t}");

    // A bad state is a usage error (exit 2) that names the choices.
    let out = agentd(&d.url, &["tasks", "list", "--state", "bogus"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("input-required"), "{out:?}");
}

#[test]
fn cancel_prints_the_resulting_state_and_errors_exit_1() {
    let d = Daemon::start(&["--agent", "tck"]);
    let task = tck_task(&d.url, "tck-input-required");
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{task}");
    let id = task["id"].as_str().unwrap();
    let out = ok(agentd(&d.url, &["tasks", "cancel", id]));
    assert_eq!(out.stdout, "CANCELED\n");

    // A finished task cannot be canceled: a JSON-RPC error, printed as
    // `agentd: <message> (code, reason)`.
    let done = tck_task(&d.url, "tck-complete-task");
    let out = agentd(&d.url, &["tasks", "cancel", done["id"].as_str().unwrap()]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.stdout, "");
    assert!(out.stderr.starts_with("agentd: "), "{out:?}");
    assert!(out.stderr.contains("(-32002, TASK_NOT_CANCELABLE)"), "{out:?}");

    let out = agentd(&d.url, &["tasks", "get", "no-such-task"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("(-32001, TASK_NOT_FOUND)"), "{out:?}");
}

/// Starts `agentd tasks watch`, forwarding its stdout lines to a channel.
fn watch(url: &str, id: &str, json: bool) -> (Child, mpsc::Receiver<String>) {
    let mut args = vec!["tasks", "watch", id];
    if json {
        args.push("--json");
    }
    let mut child = agentd_cmd(url, &args, &[]).spawn().expect("spawn watch");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Watches a waiting task, resumes it with `agentd send --task`, and
/// returns the lines the watch printed (the first already checked).
fn watch_through_resume(d: &Daemon, json: bool, first: impl Fn(&str)) -> Vec<String> {
    let task = tck_task(&d.url, "tck-input-required");
    let id = task["id"].as_str().unwrap();
    let (mut child, lines) = watch(&d.url, id, json);
    // The first line is the task as it is now: the subscription is open.
    let line = lines.recv_timeout(WITHIN).expect("watch printed the current state");
    first(&line);

    let out = ok(agentd(&d.url, &["send", "--task", id, "more input"]));
    assert_eq!(out.stdout, "Unhandled messageId prefix\n");

    let code = wait_exit(&mut child, WITHIN);
    // The watch exited, so its stdout is at EOF and the reader ends.
    let rest: Vec<String> = lines.iter().collect();
    let mut stderr = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    assert_eq!(code, 0, "watch ends when the stream ends; stderr: {stderr}");
    rest
}

#[test]
fn watch_prints_events_until_the_task_completes() {
    let d = Daemon::start(&["--agent", "tck"]);
    let rest = watch_through_resume(&d, false, |line| {
        assert_eq!(line, "INPUT_REQUIRED: Please provide more input");
    });
    assert_eq!(rest.last().map(String::as_str), Some("COMPLETED: Unhandled messageId prefix"), "{rest:?}");

    let rest = watch_through_resume(&d, true, |line| {
        let ev: Value = serde_json::from_str(line).expect("one JSON StreamResponse per line");
        assert_eq!(state(&ev), Some("TASK_STATE_INPUT_REQUIRED"), "{ev}");
    });
    let events: Vec<Value> = rest.iter().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    assert_eq!(events.last().and_then(|e| state(e)), Some("TASK_STATE_COMPLETED"), "{events:?}");

    // A finished task has nothing left to watch: its final state, exit 0
    // for COMPLETED (the code of its state otherwise, see exit_codes).
    let done = tck_task(&d.url, "tck-complete-task");
    let out = ok(agentd(&d.url, &["tasks", "watch", done["id"].as_str().unwrap()]));
    assert_eq!(out.stdout, "COMPLETED: Hello from TCK\n", "{out:?}");
}

#[test]
fn a_watch_cut_short_by_a_shutdown_is_an_error() {
    let mut d = Daemon::start(&["--agent", "tck"]);
    let task = tck_task(&d.url, "tck-input-required");
    let id = task["id"].as_str().unwrap();
    let (mut child, lines) = watch(&d.url, id, false);
    lines.recv_timeout(WITHIN).expect("watch printed the current state");
    d.stop();
    let code = wait_exit(&mut child, WITHIN);
    let mut stderr = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    assert_eq!(code, 1, "a task still waiting did not end; stderr: {stderr}");
    assert!(stderr.starts_with("agentd: ") && stderr.contains("stream"), "{stderr}");
}

/// A server that answers any request with an event stream whose one event
/// never ends: `data: xxxx…` until the client hangs up.
fn endless_event_server() -> String {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let Ok((mut conn, _)) = listener.accept() else { return };
        // The request head, so the client sees an answer to what it sent.
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && conn.read_exact(&mut byte).is_ok() {
            head.push(byte[0]);
        }
        let start = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: ";
        let chunk = vec![b'x'; 64 * 1024];
        if conn.write_all(start.as_bytes()).is_err() {
            return;
        }
        while conn.write_all(&chunk).is_ok() {}
    });
    url
}

#[test]
fn an_event_that_never_ends_is_refused_not_buffered() {
    let url = endless_event_server();
    let child = agentd_cmd(&url, &["tasks", "watch", "t-1"], &[]).spawn().expect("spawn agentd");
    let out = wait_output(child, WITHIN);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.starts_with("agentd: the event stream from "), "{out:?}");
    assert!(out.stderr.contains("an event is larger than 67108864 bytes"), "{out:?}");
}

#[test]
fn an_unreachable_daemon_is_named_with_a_hint() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}");
    // Exit 3: the daemon could not be reached (not a usage error, not a task's end).
    let out = agentd(&url, &["send", "hello"]);
    assert_eq!(out.code, 3, "{out:?}");
    assert_eq!(out.stdout, "");
    assert!(out.stderr.starts_with(&format!("agentd: could not reach agentd at {url}")), "{out:?}");
    assert!(out.stderr.contains("agentd serve"), "{out:?}");
    let out = agentd(&url, &["tasks", "list"]);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stderr.contains(&url), "{out:?}");
}

#[test]
fn a_url_without_its_scheme_is_a_usage_error() {
    for url in ["127.0.0.1:7701", "localhost:7701", "ftp://127.0.0.1:7701"] {
        let out = agentd(url, &["tasks", "list"]);
        assert_eq!(out.code, 2, "{out:?}");
        assert_eq!(
            out.stderr,
            format!("agentd: --url {url:?}: expected a URL like http://127.0.0.1:7420\n"),
            "{out:?}"
        );
    }
}

#[test]
fn a_protected_daemon_wants_the_right_token() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = write_config(
        tmp.path(),
        "auth:\n  tokens:\n    - id: \"user:alice\"\n      role: user\n      token: env:CLI_TEST_TOKEN\n",
    );
    let cfg = cfg.to_str().unwrap();
    let d =
        Daemon::start_with_env(&tmp.path().join("data"), &["--config", cfg], &[("CLI_TEST_TOKEN", "s3cret")]);

    let out = agentd(&d.url, &["send", "--token", "wrong-token", "hello"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.starts_with("agentd: the bearer token is not valid (HTTP 401, UNAUTHENTICATED)"),
        "{out:?}"
    );
    assert!(!out.stderr.contains("wrong-token"), "the token is never printed: {out:?}");

    let out = agentd(&d.url, &["tasks", "list"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("requires a bearer token") && out.stderr.contains("401"), "{out:?}");

    let out = ok(agentd_env(&d.url, &["send", "hello"], &[("AGENTD_TOKEN", "s3cret")]));
    assert_eq!(out.stdout, "echo: hello\n");
    let out = ok(agentd(&d.url, &["tasks", "list", "--token", "s3cret"]));
    assert_eq!(out.stdout.lines().count(), 2, "a header and the task: {out:?}");
}
