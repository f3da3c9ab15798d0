//! A daemon in this test process: `agentd::Daemon::build` + `serve` on
//! `127.0.0.1:0`, on a thread of its own with its own runtime (so it
//! outlives the runtime of the test that started it) and its own log (a
//! tracing subscriber set as the default on every thread of that runtime:
//! the global one can be set only once per process). Its configuration
//! comes from the same `serve` arguments a process would get, never from
//! variables a test sets (tests share the environment): a daemon that needs
//! variables runs as a process (`Daemon::start_with_env`).

use clap::Parser;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

pub struct InProcess {
    shutdown: CancellationToken,
    thread: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
}

impl InProcess {
    /// Builds and serves a daemon; returns it with its base URL, or the
    /// reason it did not start.
    pub fn start(dir: &Path, args: &[&str], log: Arc<Mutex<String>>) -> Result<(InProcess, String), String> {
        let mut argv: Vec<String> = ["agentd", "serve", "--listen", "127.0.0.1:0", "--data-dir"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        argv.push(dir.to_str().expect("utf-8 data dir").to_owned());
        argv.extend(args.iter().map(|a| (*a).to_owned()));
        let shutdown = CancellationToken::new();
        let (tx, rx) = std::sync::mpsc::channel::<Result<String, String>>();
        let token = shutdown.clone();
        let thread = std::thread::Builder::new()
            .name("agentd-in-process".into())
            .spawn(move || run(argv, log, token, tx))
            .expect("spawn the daemon's thread");
        match rx.recv() {
            Ok(Ok(url)) => Ok((InProcess { shutdown, thread: Some(thread) }, url)),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err(match thread.join() {
                Ok(r) => format!("the daemon's thread ended: {r:?}"),
                Err(_) => "the daemon's thread panicked".into(),
            }),
        }
    }

    /// The stop a signal starts (the drain), waited for: Ok when `serve`
    /// returned Ok.
    pub fn stop(&mut self) -> Result<(), String> {
        self.shutdown.cancel();
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(Ok(()))) | None => Ok(()),
            Some(Ok(Err(e))) => Err(format!("{e:#}")),
            Some(Err(_)) => Err("the daemon's thread panicked".into()),
        }
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

fn run(
    argv: Vec<String>,
    log: Arc<Mutex<String>>,
    shutdown: CancellationToken,
    started: std::sync::mpsc::Sender<Result<String, String>>,
) -> anyhow::Result<()> {
    let fail = |e: anyhow::Error| {
        let _ = started.send(Err(format!("{e:#}")));
        e
    };
    let cfg = config(&argv).map_err(fail)?;
    let dispatch = subscriber(&cfg, log);
    let _default = tracing::dispatcher::set_default(&dispatch);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(move || {
            // For the life of the runtime's thread.
            std::mem::forget(tracing::dispatcher::set_default(&dispatch));
        })
        .build()
        .map_err(|e| fail(e.into()))?;
    let r = rt.block_on(async {
        let listener = agentd::Daemon::bind(&cfg).await.map_err(fail)?;
        let daemon = agentd::Daemon::build(cfg).await.map_err(fail)?;
        let url = format!("http://{}", listener.local_addr()?);
        let _ = started.send(Ok(url));
        daemon.serve(listener, shutdown).await
    });
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    r
}

/// The configuration `agentd serve ARGS` would load, logging at `info` (a
/// process gets `AGENTD_LOG=info`) and with no shutdown grace: a daemon
/// that a test drops stops its turns at once (a test of the grace runs a
/// process and signals it).
fn config(argv: &[String]) -> anyhow::Result<agentd::config::Config> {
    let cli = agentd::cli::Cli::try_parse_from(argv)?;
    let Some(agentd::cli::Command::Serve(flags)) = cli.command else { unreachable!("serve args") };
    // No process environment: tests run side by side in one process.
    let mut cfg = agentd::config::load_from(&flags, &Default::default())?;
    cfg.log.level = "info".into();
    cfg.shutdown.grace_secs = 0;
    Ok(cfg)
}

fn subscriber(cfg: &agentd::config::Config, log: Arc<Mutex<String>>) -> tracing::Dispatch {
    let filter = tracing_subscriber::EnvFilter::new(agentd::config::log_directives(&cfg.log.level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(move || LogWriter(log.clone()))
        .with_ansi(false);
    match cfg.log.format {
        agentd::config::LogFormat::Json => tracing::Dispatch::new(builder.json().finish()),
        agentd::config::LogFormat::Text => tracing::Dispatch::new(builder.finish()),
    }
}

/// Appends what the subscriber writes to the daemon's log.
struct LogWriter(Arc<Mutex<String>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push_str(&String::from_utf8_lossy(buf));
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
