//! The names a model sees: `<server>__<tool>`, in the charset and length a
//! function name may have at OpenAI-compatible APIs (`^[a-zA-Z0-9_-]{1,64}$`).
//! A name that had to be cut ends in `_` and 8 hex digits of a hash of the
//! server and tool; when two tools still come out alike, the later one (in
//! server, then tool order) gets the hashed form, so the same tools always
//! get the same names.

use sha2::{Digest, Sha256};
use std::collections::HashSet;

/// The longest name a model is given.
pub const MAX_NAME: usize = 64;

/// Every character outside `[a-zA-Z0-9_-]` becomes `_`.
fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

fn hash8(server: &str, tool: &str) -> String {
    let mut h = Sha256::new();
    h.update(server.as_bytes());
    h.update([0]);
    h.update(tool.as_bytes());
    hex::encode(&h.finalize()[..4])
}

/// The cut, hashed form of a name (`MAX_NAME` characters at most).
fn hashed(base: &str, server: &str, tool: &str) -> String {
    let keep = base.len().min(MAX_NAME - 9);
    format!("{}_{}", &base[..keep], hash8(server, tool))
}

/// The plain name of `server`'s `tool`: sanitised, cut and hashed only when
/// longer than `MAX_NAME`.
pub fn tool_name(server: &str, tool: &str) -> String {
    let base = sanitize(&format!("{server}__{tool}"));
    if base.len() <= MAX_NAME { base } else { hashed(&base, server, tool) }
}

/// Names for `(server, tool)` pairs, in the order given, unique: pairs are
/// considered in (server, tool) order and one whose name is taken gets the
/// hashed form (and, in the unheard-of case that is taken too, a counter).
pub fn assign(pairs: &[(&str, &str)]) -> Vec<String> {
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.sort_by(|&a, &b| pairs[a].cmp(&pairs[b]));
    let mut taken = HashSet::new();
    let mut out = vec![String::new(); pairs.len()];
    for i in order {
        let (server, tool) = pairs[i];
        let mut name = tool_name(server, tool);
        if taken.contains(&name) {
            name = hashed(&sanitize(&format!("{server}__{tool}")), server, tool);
            let stem = name.clone();
            let mut n = 2;
            while taken.contains(&name) {
                let suffix = format!("-{n}");
                name = format!("{}{suffix}", &stem[..stem.len().min(MAX_NAME - suffix.len())]);
                n += 1;
            }
        }
        taken.insert(name.clone());
        out[i] = name;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        (1..=MAX_NAME).contains(&name.len())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn plain_names_join_server_and_tool() {
        assert_eq!(tool_name("files", "read_file"), "files__read_file");
        assert_eq!(tool_name("web", "fetch.url/v2"), "web__fetch_url_v2");
    }

    #[test]
    fn long_names_are_cut_with_a_hash_and_stay_valid() {
        let long = "x".repeat(100);
        let a = tool_name("srv", &long);
        assert!(valid(&a), "{a}");
        assert_eq!(a.len(), MAX_NAME);
        assert!(a.starts_with("srv__xxx"));
        // Two long names alike in their first 55 characters differ.
        let b = tool_name("srv", &format!("{long}y"));
        assert_ne!(a, b);
        assert_eq!(a, tool_name("srv", &long), "the same tool gets the same name");
    }

    #[test]
    fn collisions_are_resolved_the_same_way_whatever_the_order() {
        // `a.b` and `a_b` sanitise alike.
        let one = assign(&[("s", "a.b"), ("s", "a_b"), ("t", "x")]);
        let two = assign(&[("t", "x"), ("s", "a_b"), ("s", "a.b")]);
        assert_eq!(one[0], two[2]);
        assert_eq!(one[1], two[1]);
        assert_eq!(one[2], "t__x");
        assert_ne!(one[0], one[1]);
        // `a.b` sorts first, so it keeps the plain name.
        assert_eq!(one[0], "s__a_b");
        assert!(one[1].starts_with("s__a_b_") && valid(&one[1]), "{}", one[1]);
    }
}
