//! The address classifier of the SSRF guard: which IP addresses a webhook
//! may not reach (loopback, private, link-local, reserved and the like).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` is not a public unicast address, as a phrase that completes
/// "resolves to 10.0.0.1, …" (for example "a private address"), or `None`
/// for an address a webhook may target.
///
/// IPv6 forms that embed an IPv4 address (IPv4-mapped `::ffff:0:0/96`,
/// IPv4-compatible `::/96`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are
/// judged by the IPv4 address they carry.
pub fn refusal_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

/// Whether `ip` is in `net/len` (IPv4).
fn in_v4(ip: Ipv4Addr, net: [u8; 4], len: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - len).unwrap_or(0);
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

/// Whether `ip` is in `net/len` (IPv6).
fn in_v6(ip: Ipv6Addr, net: [u16; 8], len: u32) -> bool {
    let mask = u128::MAX.checked_shl(128 - len).unwrap_or(0);
    u128::from(ip) & mask == u128::from(Ipv6Addr::from(net)) & mask
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    const TABLE: &[([u8; 4], u32, &str)] = &[
        ([0, 0, 0, 0], 32, "the unspecified address"),
        ([255, 255, 255, 255], 32, "the broadcast address"),
        ([0, 0, 0, 0], 8, "a \"this network\" address (0.0.0.0/8)"),
        ([127, 0, 0, 0], 8, "a loopback address"),
        ([10, 0, 0, 0], 8, "a private address"),
        ([172, 16, 0, 0], 12, "a private address"),
        ([192, 168, 0, 0], 16, "a private address"),
        ([100, 64, 0, 0], 10, "a carrier-grade NAT (shared) address"),
        ([169, 254, 0, 0], 16, "a link-local address"),
        ([192, 0, 0, 0], 24, "an IETF protocol-assignment address"),
        ([192, 0, 2, 0], 24, "a documentation address"),
        ([198, 51, 100, 0], 24, "a documentation address"),
        ([203, 0, 113, 0], 24, "a documentation address"),
        ([198, 18, 0, 0], 15, "a benchmarking address"),
        ([224, 0, 0, 0], 4, "a multicast address"),
        ([240, 0, 0, 0], 4, "a reserved address"),
    ];
    TABLE.iter().find(|(net, len, _)| in_v4(ip, *net, *len)).map(|(_, _, why)| *why)
}

fn v6_reason(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some("the unspecified address");
    }
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_reason(v4);
    }
    let bits = u128::from(ip);
    // The low 32 bits, for the prefixes that carry an IPv4 address there.
    let low_v4 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    if in_v6(ip, [0; 8], 96) {
        return Some(v4_reason(low_v4).unwrap_or("a deprecated IPv4-compatible IPv6 address"));
    }
    if in_v6(ip, [0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96) {
        return v4_reason(low_v4);
    }
    if in_v6(ip, [0x2002, 0, 0, 0, 0, 0, 0, 0], 16) {
        let embedded = Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32);
        return v4_reason(embedded);
    }
    const TABLE: &[([u16; 8], u32, &str)] = &[
        ([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, "a local-use NAT64 address"),
        ([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "a discard-only address"),
        ([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, "a documentation address"),
        ([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, "a documentation address"),
        ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "a unique-local (private) address"),
        ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "a link-local address"),
        ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, "a site-local address"),
        ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "a multicast address"),
    ];
    TABLE.iter().find(|(net, len, _)| in_v6(ip, *net, *len)).map(|(_, _, why)| *why)
}

#[cfg(test)]
mod tests {
    use super::refusal_reason;
    use std::net::IpAddr;

    fn why(s: &str) -> Option<&'static str> {
        refusal_reason(s.parse::<IpAddr>().expect("test address"))
    }

    #[test]
    fn refuses_non_public_ipv4() {
        assert_eq!(why("127.0.0.1"), Some("a loopback address"));
        assert_eq!(why("127.255.0.9"), Some("a loopback address"));
        for ip in ["10.0.0.1", "10.255.255.255", "172.16.0.1", "172.31.255.254", "192.168.1.1"] {
            assert_eq!(why(ip), Some("a private address"), "{ip}");
        }
        assert_eq!(why("169.254.169.254"), Some("a link-local address"));
        assert_eq!(why("100.64.0.1"), Some("a carrier-grade NAT (shared) address"));
        assert_eq!(why("100.127.255.255"), Some("a carrier-grade NAT (shared) address"));
        assert_eq!(why("0.0.0.0"), Some("the unspecified address"));
        assert_eq!(why("0.1.2.3"), Some("a \"this network\" address (0.0.0.0/8)"));
        assert_eq!(why("255.255.255.255"), Some("the broadcast address"));
        assert_eq!(why("224.0.0.251"), Some("a multicast address"));
        assert_eq!(why("239.1.1.1"), Some("a multicast address"));
        assert_eq!(why("240.0.0.1"), Some("a reserved address"));
        for ip in ["192.0.2.1", "198.51.100.7", "203.0.113.200"] {
            assert_eq!(why(ip), Some("a documentation address"), "{ip}");
        }
        assert_eq!(why("198.18.0.1"), Some("a benchmarking address"));
    }

    #[test]
    fn allows_public_ipv4_at_range_edges() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "172.15.255.255",
            "172.32.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "169.253.255.255",
            "11.0.0.0",
            "9.255.255.255",
            "192.167.255.255",
            "192.169.0.0",
            "223.255.255.254",
        ] {
            assert_eq!(why(ip), None, "{ip}");
        }
    }

    #[test]
    fn refuses_non_public_ipv6() {
        assert_eq!(why("::1"), Some("a loopback address"));
        assert_eq!(why("::"), Some("the unspecified address"));
        assert_eq!(why("fe80::1"), Some("a link-local address"));
        assert_eq!(why("febf::1"), Some("a link-local address"));
        assert_eq!(why("fc00::1"), Some("a unique-local (private) address"));
        assert_eq!(why("fd12:3456::1"), Some("a unique-local (private) address"));
        assert_eq!(why("ff02::1"), Some("a multicast address"));
        assert_eq!(why("2001:db8::1"), Some("a documentation address"));
        assert_eq!(why("fec0::1"), Some("a site-local address"));
        assert_eq!(why("100::1"), Some("a discard-only address"));
    }

    #[test]
    fn judges_embedded_ipv4_by_the_ipv4_address() {
        assert_eq!(why("::ffff:127.0.0.1"), Some("a loopback address"));
        assert_eq!(why("::ffff:10.1.2.3"), Some("a private address"));
        assert_eq!(why("::ffff:169.254.169.254"), Some("a link-local address"));
        assert_eq!(why("::ffff:8.8.8.8"), None);
        assert_eq!(why("::127.0.0.1"), Some("a loopback address"));
        assert_eq!(why("::8.8.8.8"), Some("a deprecated IPv4-compatible IPv6 address"));
        assert_eq!(why("64:ff9b::10.0.0.1"), Some("a private address"));
        assert_eq!(why("64:ff9b::8.8.8.8"), None);
        assert_eq!(why("2002:7f00:1::"), Some("a loopback address"));
        assert_eq!(why("2002:c0a8:101::1"), Some("a private address"));
        assert_eq!(why("2002:808:808::1"), None);
    }

    #[test]
    fn allows_public_ipv6() {
        for ip in ["2001:4860:4860::8888", "2606:4700:4700::1111", "2a00:1450::1"] {
            assert_eq!(why(ip), None, "{ip}");
        }
    }
}
