//! The symbol-ordering list as the linker gets it (see `build.rs`); also
//! compiled into agentd's test suite (`tests/suite/link_order.rs`).

/// How far the number of an LTO-renamed local copy is looked for around
/// the listed one. Two commits after the list was written the numbers had
/// moved by 2 to 14; the names a wider window adds are copies of the same
/// function at most, which cost their size in the ordered block.
pub const LTO_SUFFIX_WINDOW: u32 = 64;

/// The list as the linker gets it: comments left out, each name once, and
/// after a name `base.N` (LTO's renaming of a local copy) the names
/// `base.N±1`, `base.N±2`, … up to `window`, nearest first.
pub fn with_neighbours(list: &str, window: u32) -> String {
    let mut seen = std::collections::HashSet::new();
    let mut out = String::new();
    let mut add = |name: &str| {
        if seen.insert(name.to_owned()) {
            out.push_str(name);
            out.push('\n');
        }
    };
    for name in list.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        add(name);
        let Some((base, n)) = name.rsplit_once('.') else { continue };
        let Ok(n) = n.parse::<u32>() else { continue };
        for d in 1..=window {
            for m in [n.checked_add(d), n.checked_sub(d)].into_iter().flatten() {
                add(&format!("{base}.{m}"));
            }
        }
    }
    out
}
