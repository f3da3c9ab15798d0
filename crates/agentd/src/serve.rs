//! `agentd serve`: logging to stderr, then the [`Daemon`] on the configured
//! address until SIGINT or SIGTERM, after which it drains and returns.

use crate::config::Config;
use crate::daemon::Daemon;
use tokio_util::sync::CancellationToken;

pub async fn run(cfg: Config) -> anyhow::Result<()> {
    init_logging(&cfg)?;
    let daemon = Daemon::build(cfg).await?;
    let listener = daemon.bind().await?;
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

fn init_logging(cfg: &Config) -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    // Checked by config::load too; an invalid filter is never silently `info`.
    let filter = EnvFilter::try_new(&cfg.log.level)
        .map_err(|e| crate::config::log_filter_error(&cfg.log.level, &e))?;
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    if cfg.log.format == crate::config::LogFormat::Json {
        builder.json().init();
    } else {
        builder.init();
    }
    Ok(())
}
