//! `agentd serve`: logging to stderr, then the [`Daemon`] on the configured
//! address until SIGINT or SIGTERM, after which it drains and returns.

use crate::config::Config;
use crate::daemon::{Daemon, Listeners};
use crate::telemetry::Tracing;
use anyhow::Context;
use tokio_util::sync::CancellationToken;

pub async fn run(cfg: Config) -> anyhow::Result<()> {
    let tracing = init_logging(&cfg)?;
    let served = serve(cfg).await;
    if let Some(t) = tracing {
        t.shutdown().await;
    }
    served
}

async fn serve(cfg: Config) -> anyhow::Result<()> {
    let (listener, daemon) = start_on_a_thread_of_its_own(cfg).await?;
    let shutdown = CancellationToken::new();
    let serve = daemon.serve(listener, shutdown.clone());
    tokio::pin!(serve);
    tokio::select! {
        r = &mut serve => return r,
        () = stop_signal() => {}
    }
    shutdown.cancel();
    serve.await
}

/// Binds the listeners, then builds the daemon (which opens and recovers
/// the store), on a thread that ends when they are done. This is the
/// deepest stack of the daemon's life (`Daemon::build`'s own frame is some
/// 80 KiB, SQLite's open and recovery run below it); on the thread that then
/// serves, those pages would stay resident for the daemon's whole life,
/// whereas glibc gives an ended thread's stack back to the kernel.
async fn start_on_a_thread_of_its_own(cfg: Config) -> anyhow::Result<(Listeners, Daemon)> {
    let handle = tokio::runtime::Handle::current();
    let (started, start) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("agentd-start".into())
        .spawn(move || {
            let _ = started.send(handle.block_on(async {
                // Bound first: an address in use leaves no data directory behind.
                let listeners = Daemon::bind(&cfg).await?;
                Ok((listeners, Daemon::build(cfg).await?))
            }));
        })
        .context("cannot start the start-up thread")?;
    start.await.context("the start-up thread ended without an answer")?
}

/// SIGINT or SIGTERM (SIGINT only where there is no SIGTERM).
async fn stop_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// Log lines to stderr, and traces when an OTLP endpoint is set.
fn init_logging(cfg: &Config) -> anyhow::Result<Option<Tracing>> {
    use tracing_subscriber::EnvFilter;
    // Checked by config::load too; an invalid filter is never silently `info`.
    let filter = EnvFilter::try_new(crate::config::log_directives(&cfg.log.level))
        .map_err(|e| crate::config::log_filter_error(&cfg.log.level, &e))?;
    use std::io::IsTerminal;
    if let Some(url) = cfg.telemetry.traces_url() {
        return with_traces(cfg, filter, &url).map(Some);
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    if cfg.log.format == crate::config::LogFormat::Json {
        builder.json().init();
    } else {
        builder.init();
    }
    Ok(None)
}

/// The log lines as without traces, each layer with its own filter: the
/// traces' spans are exported whatever the log level.
fn with_traces(cfg: &Config, filter: tracing_subscriber::EnvFilter, url: &str) -> anyhow::Result<Tracing> {
    use std::io::IsTerminal;
    use tracing_subscriber::prelude::*;
    let tracing = Tracing::start(url)?;
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let fmt = if cfg.log.format == crate::config::LogFormat::Json { fmt.json().boxed() } else { fmt.boxed() };
    tracing_subscriber::registry().with(fmt.with_filter(filter)).with(tracing.layer()).init();
    tracing::info!(endpoint = url, "exporting traces over OTLP/HTTP");
    Ok(tracing)
}
