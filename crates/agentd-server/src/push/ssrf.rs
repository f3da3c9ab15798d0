//! The SSRF guard: which webhook URLs may be registered ([`SsrfGuard`], the
//! engine's [`PushUrlPolicy`]) and which addresses delivery may connect to
//! ([`GuardedResolver`] for names, [`SsrfGuard::check_target`] for literal
//! IPs, which bypass resolvers). Checking again at delivery time closes DNS
//! rebinding: a name that resolved to a public address at registration may
//! point at 127.0.0.1 later.

use super::addr::refusal_reason;
use agentd_core::PushUrlPolicy;
use async_trait::async_trait;
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// What every refusal ends with: the rule and the way out.
const HINT: &str = "webhooks may not target private networks (set push.allow_private for single-host setups)";

/// How long a registration may wait for DNS.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// The host of a webhook URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// An IP literal (`http://10.0.0.1/`, `http://[::1]/`).
    Ip(IpAddr),
    /// A name to resolve, lowercase, without a trailing dot.
    Name(String),
}

/// Refuses webhook URLs that reach loopback, private, link-local and other
/// non-public addresses, unless `allow_private` (single-host setups where
/// the receiver runs next to the daemon).
#[derive(Clone, Copy, Debug, Default)]
pub struct SsrfGuard {
    allow_private: bool,
}

impl SsrfGuard {
    pub fn new(allow_private: bool) -> Self {
        Self { allow_private }
    }

    pub fn allow_private(&self) -> bool {
        self.allow_private
    }

    /// Refuses an address the URL's host resolved to. The refusal says why
    /// (loopback, private, …) but never the address: a client must not be
    /// able to resolve internal names through the daemon.
    pub fn check_resolved(&self, host: &str, ip: IpAddr) -> Result<(), String> {
        match refusal_reason(ip) {
            Some(why) if !self.allow_private => {
                Err(format!("host {host:?} is refused: it resolves to {why}; {HINT}"))
            }
            _ => Ok(()),
        }
    }

    /// The checks that need no DNS: scheme http or https, a host, no
    /// `localhost` name, no refused IP literal. Run before every delivery;
    /// names are checked by [`GuardedResolver`] when the request connects.
    pub fn check_target(&self, url: &Url) -> Result<Target, String> {
        let scheme = url.scheme();
        if scheme != "http" && scheme != "https" {
            return Err(format!("scheme {scheme:?} is not supported; webhook URLs must use http or https"));
        }
        let target = target_of(url).ok_or_else(|| "has no host".to_owned())?;
        if self.allow_private {
            return Ok(target);
        }
        match &target {
            Target::Ip(ip) => {
                if let Some(why) = refusal_reason(*ip) {
                    return Err(format!("{ip} is refused: it is {why}; {HINT}"));
                }
            }
            Target::Name(name) if is_localhost_name(name) => {
                return Err(format!("{name:?} is a loopback name; {HINT}"));
            }
            Target::Name(_) => {}
        }
        Ok(target)
    }

    /// The registration check: [`SsrfGuard::check_target`], then, for a name,
    /// resolution; every address it resolves to must be allowed.
    pub async fn check_url(&self, url: &str) -> Result<(), String> {
        let parsed = Url::parse(url.trim()).map_err(|e| format!("is not a valid URL: {e}"))?;
        let target = self.check_target(&parsed)?;
        let Target::Name(name) = target else {
            return Ok(());
        };
        if self.allow_private {
            return Ok(());
        }
        let port = parsed.port_or_known_default().unwrap_or(80);
        let addrs = resolve(&name, port).await?;
        for addr in addrs {
            self.check_resolved(&name, addr.ip())?;
        }
        Ok(())
    }
}

#[async_trait]
impl PushUrlPolicy for SsrfGuard {
    async fn check(&self, url: &str) -> Result<(), String> {
        self.check_url(url).await
    }
}

/// The host of a URL. `Url` has already normalized it: IPv4 in any legacy
/// form (`2130706433`, `0x7f.1`) is dotted decimal, IPv6 is bracketed and
/// names are lowercase.
fn target_of(url: &Url) -> Option<Target> {
    let host = url.host_str().filter(|h| !h.is_empty())?;
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner.parse::<Ipv6Addr>().ok().map(|ip| Target::Ip(IpAddr::V6(ip)));
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(Target::Ip(ip));
    }
    Some(Target::Name(host.trim_end_matches('.').to_ascii_lowercase()))
}

/// `localhost` and `*.localhost` always mean loopback (RFC 6761), whatever
/// DNS says; they are refused without asking it.
pub fn is_localhost_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

async fn resolve(name: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    let lookup = tokio::net::lookup_host((name, port));
    let addrs: Vec<SocketAddr> = match tokio::time::timeout(RESOLVE_TIMEOUT, lookup).await {
        Ok(Ok(addrs)) => addrs.collect(),
        Ok(Err(e)) => return Err(format!("host {name:?} could not be resolved: {e}")),
        Err(_) => {
            return Err(format!("host {name:?} could not be resolved in {RESOLVE_TIMEOUT:?}"));
        }
    };
    if addrs.is_empty() {
        return Err(format!("host {name:?} resolves to no address"));
    }
    Ok(addrs)
}

/// The delivery client's resolver: resolves with the system resolver and
/// drops refused addresses, failing when none remain, so a request can
/// never connect to a private address through a name.
#[derive(Clone, Copy, Debug, Default)]
pub struct GuardedResolver {
    guard: SsrfGuard,
}

impl GuardedResolver {
    pub fn new(guard: SsrfGuard) -> Self {
        Self { guard }
    }

    /// The allowed addresses of `name` (port 0: reqwest sets the port).
    pub async fn lookup(&self, name: &str) -> Result<Vec<SocketAddr>, String> {
        if !self.guard.allow_private && is_localhost_name(name) {
            return Err(format!("{name:?} is a loopback name; {HINT}"));
        }
        let addrs = resolve(name, 0).await?;
        if self.guard.allow_private {
            return Ok(addrs);
        }
        let mut refusal = None;
        let allowed: Vec<SocketAddr> = addrs
            .into_iter()
            .filter(|a| match self.guard.check_resolved(name, a.ip()) {
                Ok(()) => true,
                Err(e) => {
                    refusal.get_or_insert(e);
                    false
                }
            })
            .collect();
        match refusal {
            Some(e) if allowed.is_empty() => Err(e),
            _ => Ok(allowed),
        }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let this = *self;
        let name = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = this.lookup(&name).await?;
            let addrs: Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("test URL")
    }

    #[test]
    fn targets_are_normalized() {
        let g = SsrfGuard::new(true);
        assert_eq!(g.check_target(&url("http://[::1]:8080/x")), Ok(Target::Ip("::1".parse().expect("ip"))));
        assert_eq!(
            g.check_target(&url("http://2130706433/")),
            Ok(Target::Ip("127.0.0.1".parse().expect("ip")))
        );
        assert_eq!(
            g.check_target(&url("https://Hooks.Example.COM./a")),
            Ok(Target::Name("hooks.example.com".into()))
        );
    }

    #[test]
    fn a_refused_name_is_not_told_what_it_resolves_to() {
        let g = SsrfGuard::new(false);
        for (ip, why) in [
            ("10.20.30.40", "a private address"),
            ("127.0.0.53", "a loopback address"),
            ("fd00::1234", "a unique-local (private) address"),
            ("169.254.169.254", "a link-local address"),
        ] {
            let e = g.check_resolved("db.internal", ip.parse().expect("ip")).expect_err(ip);
            assert!(e.contains("\"db.internal\" is refused") && e.contains(why), "{ip}: {e}");
            assert!(!e.contains(ip), "the refusal must not name the address {ip}: {e}");
        }
        g.check_resolved("hooks.example.com", "8.8.8.8".parse().expect("ip")).expect("public");
    }

    #[test]
    fn literal_and_localhost_targets_are_refused() {
        let g = SsrfGuard::new(false);
        for u in ["http://0x7f.1/", "http://[::ffff:7f00:1]/", "http://LOCALHOST./", "http://a.b.localhost/"]
        {
            let e = g.check_target(&url(u)).expect_err(u);
            assert!(e.contains("push.allow_private"), "{u}: {e}");
        }
        assert!(g.check_target(&url("http://8.8.8.8/")).is_ok());
        let e = g.check_target(&url("file:///etc/passwd")).expect_err("file");
        assert!(e.contains("\"file\""), "{e}");
    }
}
