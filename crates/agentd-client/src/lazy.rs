//! An HTTP client built when it is first used.

use std::sync::{Arc, OnceLock};

type Build = dyn Fn() -> Result<reqwest::Client, String> + Send + Sync;

/// A reqwest client built on first use, then shared by every clone.
/// Building one loads and parses the system's root certificates (reqwest's
/// rustls verifier): about 20 ms and a few MiB each, which a daemon should
/// not pay at start for delivery, delegation or MCP clients it may never
/// use. A failed build is kept and reported by every use.
#[derive(Clone)]
pub struct LazyHttp {
    client: Arc<OnceLock<Result<reqwest::Client, String>>>,
    build: Arc<Build>,
}

impl LazyHttp {
    pub fn new(build: impl Fn() -> Result<reqwest::Client, String> + Send + Sync + 'static) -> Self {
        Self { client: Arc::new(OnceLock::new()), build: Arc::new(build) }
    }

    /// The client, built now if this is the first use.
    pub fn get(&self) -> Result<&reqwest::Client, String> {
        self.client.get_or_init(|| (self.build)()).as_ref().map_err(Clone::clone)
    }
}

#[cfg(test)]
mod tests {
    use super::LazyHttp;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn the_client_is_built_at_first_use_once_for_every_clone() {
        let builds = Arc::new(AtomicUsize::new(0));
        let counter = builds.clone();
        let lazy = LazyHttp::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            reqwest::Client::builder().build().map_err(|e| e.to_string())
        });
        let other = lazy.clone();
        assert_eq!(builds.load(Ordering::SeqCst), 0, "nothing is built before the first use");
        assert!(lazy.get().is_ok() && other.get().is_ok() && lazy.get().is_ok());
        assert_eq!(builds.load(Ordering::SeqCst), 1, "one build, shared");
    }

    #[test]
    fn a_failed_build_is_reported_by_every_use() {
        let lazy = LazyHttp::new(|| Err("no TLS backend".to_owned()));
        assert_eq!(lazy.get().err().as_deref(), Some("no TLS backend"));
        assert_eq!(lazy.clone().get().err().as_deref(), Some("no TLS backend"));
    }
}
