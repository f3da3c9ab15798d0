//! Connection caps: how many connections are open at once, in all and from
//! one peer: an IPv4 address, or an IPv6 /64. A connection over either cap
//! is answered with a 503 and closed at once; accepting goes on for
//! everyone else.
//!
//! The caps also count the connections that close, for
//! [`super::bulk`].

use super::bulk::BulkCloses;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub struct ConnectionCaps {
    total: Arc<Semaphore>,
    max_total: usize,
    per_peer: Mutex<HashMap<IpAddr, usize>>,
    max_per_peer: usize,
    closes: BulkCloses,
}

/// Which cap refused a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    Total,
    Peer,
}

/// An admitted connection's place under both caps, given back on drop.
pub struct Admitted {
    _total: OwnedSemaphorePermit,
    caps: Arc<ConnectionCaps>,
    peer: IpAddr,
}

impl ConnectionCaps {
    pub fn new(max_total: usize, max_per_peer: usize) -> Arc<Self> {
        Arc::new(Self {
            total: Arc::new(Semaphore::new(max_total)),
            max_total,
            per_peer: Mutex::new(HashMap::new()),
            max_per_peer,
            closes: BulkCloses::default(),
        })
    }

    /// A place for a connection from `peer`, or which cap is full. An
    /// IPv4-mapped IPv6 address counts as its IPv4 address; an IPv6
    /// address counts as its /64.
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> Result<Admitted, Refused> {
        let peer = peer_of(peer);
        let total = self.total.clone().try_acquire_owned().map_err(|_| Refused::Total)?;
        let mut map = self.per_peer.lock().unwrap_or_else(|p| p.into_inner());
        let n = map.entry(peer).or_insert(0);
        if *n >= self.max_per_peer {
            if *n == 0 {
                map.remove(&peer);
            }
            return Err(Refused::Peer);
        }
        *n += 1;
        self.closes.opened();
        Ok(Admitted { _total: total, caps: self.clone(), peer })
    }

    /// Resolves once every admitted connection is gone.
    pub async fn drained(&self) {
        let all = u32::try_from(self.max_total).unwrap_or(u32::MAX);
        let _ = self.total.acquire_many(all).await;
    }
}

/// The peer a connection's address counts against. One host is routinely
/// given a whole IPv6 /64 (the smallest subnet SLAAC works in) and may
/// pick any of its 2^64 addresses for each connection, so counting exact
/// IPv6 addresses caps nobody; an IPv4 host has one address.
pub(crate) fn peer_of(addr: IpAddr) -> IpAddr {
    match addr.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX))),
        v4 => v4,
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut map = self.caps.per_peer.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = map.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.peer);
            }
        }
        drop(map);
        self.caps.closes.closed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_caps_hold_and_places_come_back() {
        let caps = ConnectionCaps::new(3, 2);
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let a1 = caps.admit(a).unwrap();
        let _a2 = caps.admit("::ffff:10.0.0.1".parse().unwrap()).unwrap();
        assert_eq!(caps.admit(a).err(), Some(Refused::Peer), "a third from one address");
        let _b1 = caps.admit(b).unwrap();
        assert_eq!(caps.admit(b).err(), Some(Refused::Total), "a fourth in all");
        drop(a1);
        assert!(caps.admit(a).is_ok(), "a closed connection gives its place back");
        assert_eq!(caps.per_peer.lock().unwrap().len(), 2);
    }

    #[test]
    fn ipv6_peers_count_by_their_64_and_ipv4_peers_by_address() {
        let caps = ConnectionCaps::new(100, 2);
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let _a = caps.admit(ip("2001:db8:1:2::1")).unwrap();
        let b = caps.admit(ip("2001:db8:1:2:ffff:ffff:ffff:ffff")).unwrap();
        assert_eq!(
            caps.admit(ip("2001:db8:1:2:dead:beef::7")).err(),
            Some(Refused::Peer),
            "a third from one /64"
        );
        let _other = caps.admit(ip("2001:db8:1:3::1")).expect("the next /64 is another peer");
        drop(b);
        let _c = caps.admit(ip("2001:db8:1:2:1:2:3:4")).expect("a closed connection gives its place back");
        // Neighbouring IPv4 addresses are distinct hosts.
        let mut held = Vec::new();
        for last in 1..=4 {
            for _ in 0..2 {
                held.push(caps.admit(ip(&format!("192.0.2.{last}"))).unwrap());
            }
        }
        assert_eq!(caps.admit(ip("::ffff:192.0.2.1")).err(), Some(Refused::Peer), "mapped: its IPv4 address");
    }
}
