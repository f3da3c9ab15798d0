//! The address classifier of the SSRF guard: which IP addresses a webhook
//! may not reach. One table per family, read by longest matching prefix.
//!
//! The tables hold every entry of the IANA special-purpose address
//! registries, as of their 2025 revisions:
//! - IPv4: <https://www.iana.org/assignments/iana-ipv4-special-registry/> (RFC 6890)
//! - IPv6: <https://www.iana.org/assignments/iana-ipv6-special-registry/> (RFC 6890)
//!
//! and, from the address-space registries, what is not unicast or no longer
//! in use: IPv4 multicast `224.0.0.0/4` (RFC 5771), IPv6 multicast
//! `ff00::/8` and the rest of `::/8` reserved by the IETF (RFC 4291), with
//! its deprecated IPv4-compatible `::/96` (RFC 4291 §2.5.5.1) and SIIT's
//! IPv4-translated `::ffff:0:0:0/96` (RFC 2765), and site-local
//! `fec0::/10` (deprecated by RFC 3879).
//!
//! Every entry is refused, also those the registry marks globally
//! reachable (AS112 and AMT anycast, PCP and TURN anycast inside
//! `192.0.0.0/24` and `2001::/23`): they are network infrastructure, never
//! a webhook receiver. Three prefixes embed an IPv4 address that decides
//! instead, because a host reaches that IPv4 address through them:
//! IPv4-mapped `::ffff:0:0/96`, the well-known NAT64 prefix `64:ff9b::/96`
//! (RFC 6052: a public IPv4 address through the operator's translator) and
//! 6to4 `2002::/16` (RFC 3056). The local-use NAT64 prefix `64:ff9b:1::/48`
//! (RFC 8215) is refused whatever it embeds: its translator and where it
//! places the IPv4 address are the local network's choice. Teredo
//! `2001::/32` (RFC 4380) is refused too: it tunnels to an IPv4 server and
//! client of the packet's choosing.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` is not a public unicast address, as a phrase that completes
/// "resolves to …" (for example "a private address"), or `None` for an
/// address a webhook may target.
pub fn refusal_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

/// What a table entry says about the addresses it covers.
#[derive(Clone, Copy)]
enum Rule {
    Refuse(&'static str),
    /// Judged by the IPv4 address in bits `shift..shift + 32`; refused as
    /// `otherwise` when that address is public and `otherwise` is set.
    Embeds {
        shift: u32,
        otherwise: Option<&'static str>,
    },
}

const PRIVATE: &str = "a private address";
const DOCUMENTATION: &str = "a documentation address";
const AS112: &str = "an AS112 DNS sink address";
const BENCHMARKING: &str = "a benchmarking address";
const LOOPBACK: &str = "a loopback address";
const UNSPECIFIED: &str = "the unspecified address";
const MULTICAST: &str = "a multicast address";
const LINK_LOCAL: &str = "a link-local address";

#[rustfmt::skip]
const V4: &[([u8; 4], u32, &str)] = &[
    ([0, 0, 0, 0], 8, "a \"this network\" address (0.0.0.0/8)"),
    ([0, 0, 0, 0], 32, UNSPECIFIED),
    ([10, 0, 0, 0], 8, PRIVATE),
    ([100, 64, 0, 0], 10, "a carrier-grade NAT (shared) address"),
    ([127, 0, 0, 0], 8, LOOPBACK),
    ([169, 254, 0, 0], 16, LINK_LOCAL),
    ([172, 16, 0, 0], 12, PRIVATE),
    // With its /29 (DS-Lite), .8 (dummy), .9 and .10 (PCP, TURN anycast),
    // .170 and .171 (NAT64 discovery).
    ([192, 0, 0, 0], 24, "an IETF protocol-assignment address"),
    ([192, 0, 2, 0], 24, DOCUMENTATION),
    ([192, 31, 196, 0], 24, AS112),
    ([192, 52, 193, 0], 24, "an AMT relay address"),
    ([192, 88, 99, 0], 24, "a deprecated 6to4 relay anycast address"),
    ([192, 168, 0, 0], 16, PRIVATE),
    ([192, 175, 48, 0], 24, AS112),
    ([198, 18, 0, 0], 15, BENCHMARKING),
    ([198, 51, 100, 0], 24, DOCUMENTATION),
    ([203, 0, 113, 0], 24, DOCUMENTATION),
    ([224, 0, 0, 0], 4, MULTICAST),
    ([240, 0, 0, 0], 4, "a reserved address"),
    ([255, 255, 255, 255], 32, "the broadcast address"),
];

#[rustfmt::skip]
const V6: &[([u16; 8], u32, Rule)] = &[
    ([0, 0, 0, 0, 0, 0, 0, 0], 8, Rule::Refuse("a reserved IPv6 address (::/8)")),
    ([0, 0, 0, 0, 0, 0, 0, 0], 128, Rule::Refuse(UNSPECIFIED)),
    ([0, 0, 0, 0, 0, 0, 0, 1], 128, Rule::Refuse(LOOPBACK)),
    ([0, 0, 0, 0, 0, 0, 0, 0], 96,
        Rule::Embeds { shift: 0, otherwise: Some("a deprecated IPv4-compatible IPv6 address") }),
    ([0, 0, 0, 0, 0, 0xffff, 0, 0], 96, Rule::Embeds { shift: 0, otherwise: None }),
    ([0, 0, 0, 0, 0xffff, 0, 0, 0], 96,
        Rule::Embeds { shift: 0, otherwise: Some("an IPv4-translated IPv6 address") }),
    ([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96, Rule::Embeds { shift: 0, otherwise: None }),
    ([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, Rule::Refuse("a local-use NAT64 address")),
    ([0x100, 0, 0, 0, 0, 0, 0, 0], 64, Rule::Refuse("a discard-only address")),
    ([0x100, 0, 0, 1, 0, 0, 0, 0], 64, Rule::Refuse("a dummy IPv6 address")),
    // With PCP, TURN and DNS-SD anycast, AMT, AS112-v6, ORCHID and DRIP.
    ([0x2001, 0, 0, 0, 0, 0, 0, 0], 23, Rule::Refuse("an IETF protocol-assignment address")),
    ([0x2001, 0, 0, 0, 0, 0, 0, 0], 32, Rule::Refuse("a Teredo tunnel address")),
    ([0x2001, 2, 0, 0, 0, 0, 0, 0], 48, Rule::Refuse(BENCHMARKING)),
    ([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, Rule::Refuse(DOCUMENTATION)),
    ([0x2002, 0, 0, 0, 0, 0, 0, 0], 16, Rule::Embeds { shift: 80, otherwise: None }),
    ([0x2620, 0x4f, 0x8000, 0, 0, 0, 0, 0], 48, Rule::Refuse(AS112)),
    ([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, Rule::Refuse(DOCUMENTATION)),
    ([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16, Rule::Refuse("a segment-routing (SRv6) address")),
    ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, Rule::Refuse("a unique-local (private) address")),
    ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, Rule::Refuse(LINK_LOCAL)),
    ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, Rule::Refuse("a site-local address")),
    ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, Rule::Refuse(MULTICAST)),
];

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let bits = u32::from(ip);
    V4.iter()
        .filter(|(net, len, _)| {
            let mask = u32::MAX.checked_shl(32 - len).unwrap_or(0);
            bits & mask == u32::from(Ipv4Addr::from(*net)) & mask
        })
        .max_by_key(|(_, len, _)| *len)
        .map(|(_, _, why)| *why)
}

fn v6_reason(ip: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(ip);
    let rule = V6
        .iter()
        .filter(|(net, len, _)| {
            let mask = u128::MAX.checked_shl(128 - len).unwrap_or(0);
            bits & mask == u128::from(Ipv6Addr::from(*net)) & mask
        })
        .max_by_key(|(_, len, _)| *len)
        .map(|(_, _, rule)| *rule)?;
    match rule {
        Rule::Refuse(why) => Some(why),
        Rule::Embeds { shift, otherwise } => {
            let embedded = Ipv4Addr::from(((bits >> shift) & 0xffff_ffff) as u32);
            v4_reason(embedded).or(otherwise)
        }
    }
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
        assert_eq!(why("198.19.255.255"), Some("a benchmarking address"));
    }

    #[test]
    fn refuses_every_ipv4_special_purpose_block() {
        assert_eq!(why("192.88.99.1"), Some("a deprecated 6to4 relay anycast address"));
        assert_eq!(why("192.0.0.9"), Some("an IETF protocol-assignment address"));
        assert_eq!(why("192.0.0.171"), Some("an IETF protocol-assignment address"));
        assert_eq!(why("192.31.196.1"), Some("an AS112 DNS sink address"));
        assert_eq!(why("192.175.48.6"), Some("an AS112 DNS sink address"));
        assert_eq!(why("192.52.193.1"), Some("an AMT relay address"));
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
            "192.88.98.255",
            "192.88.100.0",
            "192.0.1.255",
            "198.17.255.255",
            "198.20.0.0",
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
        assert_eq!(why("3fff:fff::1"), Some("a documentation address"));
        assert_eq!(why("fec0::1"), Some("a site-local address"));
        assert_eq!(why("100::1"), Some("a discard-only address"));
        assert_eq!(why("100:0:0:1::1"), Some("a dummy IPv6 address"));
        assert_eq!(why("5f00::1"), Some("a segment-routing (SRv6) address"));
        assert_eq!(why("2620:4f:8000::1"), Some("an AS112 DNS sink address"));
    }

    #[test]
    fn refuses_every_ipv6_special_purpose_block() {
        // Teredo, whatever server and client it names.
        assert_eq!(why("2001::1"), Some("a Teredo tunnel address"));
        assert_eq!(why("2001:0:808:808::f7f7:f7f7"), Some("a Teredo tunnel address"));
        assert_eq!(why("2001:2::1"), Some("a benchmarking address"));
        for ip in ["2001:1::1", "2001:3::1", "2001:4:112::1", "2001:20::1", "2001:1ff::1"] {
            assert_eq!(why(ip), Some("an IETF protocol-assignment address"), "{ip}");
        }
        assert_eq!(why("64:ff9b:1::808:808"), Some("a local-use NAT64 address"));
        // The rest of ::/8 is reserved.
        assert_eq!(why("::1:0:0:1"), Some("a reserved IPv6 address (::/8)"));
        assert_eq!(why("ff::1"), Some("a reserved IPv6 address (::/8)"));
    }

    #[test]
    fn judges_embedded_ipv4_by_the_ipv4_address() {
        assert_eq!(why("::ffff:127.0.0.1"), Some("a loopback address"));
        assert_eq!(why("::ffff:10.1.2.3"), Some("a private address"));
        assert_eq!(why("::ffff:169.254.169.254"), Some("a link-local address"));
        assert_eq!(why("::ffff:192.88.99.1"), Some("a deprecated 6to4 relay anycast address"));
        assert_eq!(why("::ffff:8.8.8.8"), None);
        // IPv4-translated (SIIT): its IPv4 address, and refused when public.
        assert_eq!(why("::ffff:0:127.0.0.1"), Some("a loopback address"));
        assert_eq!(why("::ffff:0:10.0.0.1"), Some("a private address"));
        assert_eq!(why("::ffff:0:8.8.8.8"), Some("an IPv4-translated IPv6 address"));
        assert_eq!(why("::127.0.0.1"), Some("a loopback address"));
        assert_eq!(why("::8.8.8.8"), Some("a deprecated IPv4-compatible IPv6 address"));
        assert_eq!(why("64:ff9b::10.0.0.1"), Some("a private address"));
        assert_eq!(why("64:ff9b::127.0.0.1"), Some("a loopback address"));
        assert_eq!(why("64:ff9b::8.8.8.8"), None);
        assert_eq!(why("2002:7f00:1::"), Some("a loopback address"));
        assert_eq!(why("2002:c0a8:101::1"), Some("a private address"));
        assert_eq!(why("2002:a9fe:a9fe::1"), Some("a link-local address"));
        assert_eq!(why("2002:808:808::1"), None);
    }

    #[test]
    fn allows_public_ipv6() {
        for ip in
            ["2001:4860:4860::8888", "2606:4700:4700::1111", "2a00:1450::1", "2001:200::1", "2620:4f::1"]
        {
            assert_eq!(why(ip), None, "{ip}");
        }
    }
}
