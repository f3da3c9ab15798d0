//! Local references: `@kind/name` values and `[[kind/name]]` / `[Label](#kind/name)` prose links.

use crate::lex;
use crate::registry;

/// `@kind/name` with a registered kind.
pub(crate) fn at_ref(value: &str) -> Option<(&str, &str)> {
    let rest = value.strip_prefix('@')?;
    let (kind, name) = rest.split_once('/')?;
    (lex::is_kind(kind) && lex::is_name(name) && registry::is_known_kind(kind)).then_some((kind, name))
}

/// A prose reference found in a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProseRef {
    /// Byte range of the whole link in the line.
    pub start: usize,
    pub end: usize,
    pub kind: String,
    pub name: String,
    /// The text it delivers as (the label, or the name).
    pub label: String,
    /// As written, for messages.
    pub written: String,
}

/// Byte ranges of inline code spans (`` `x` ``) in `line`, in one pass: a run of n backticks
/// closes at the next run of exactly n.
fn code_spans(line: &str) -> Vec<(usize, usize)> {
    let b = line.as_bytes();
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'`' {
            let n = b[i..].iter().take_while(|&&c| c == b'`').count();
            runs.push((i, n));
            i += n;
        } else {
            i += 1;
        }
    }
    let mut by_len: std::collections::HashMap<usize, std::collections::VecDeque<usize>> = Default::default();
    for (k, (_, n)) in runs.iter().enumerate() {
        by_len.entry(*n).or_default().push_back(k);
    }
    let mut spans = Vec::new();
    let mut k = 0;
    while k < runs.len() {
        let (open, n) = runs[k];
        let queue = by_len.entry(n).or_default();
        while queue.front().is_some_and(|&q| q <= k) {
            queue.pop_front();
        }
        match queue.front() {
            Some(&close) => {
                spans.push((open, runs[close].0 + n));
                k = close + 1;
            }
            None => k += 1,
        }
    }
    spans
}

/// Longest link (label or target) recognised as a local reference, in bytes.
const MAX_LINK: usize = 256;

/// Sorted start positions of `pat` in `line` (overlapping).
fn positions(line: &str, pat: &str) -> Vec<usize> {
    let b = line.as_bytes();
    let p = pat.as_bytes();
    (0..b.len().saturating_sub(p.len() - 1)).filter(|&i| b[i..].starts_with(p)).collect()
}

/// The first position in `sorted` at or after `from`.
fn next(sorted: &[usize], from: usize) -> Option<usize> {
    sorted.get(sorted.partition_point(|&p| p < from)).copied()
}

/// Local references in one prose line, outside inline code, in order.
pub(crate) fn prose_refs(line: &str) -> Vec<ProseRef> {
    if !line.contains('[') {
        return Vec::new();
    }
    let spans = code_spans(line);
    let in_code = |p: usize| {
        let k = spans.partition_point(|(_, end)| *end <= p);
        spans.get(k).is_some_and(|(a, _)| *a <= p)
    };
    let wiki_ends = positions(line, "]]");
    let frag_mids = positions(line, "](#");
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        let rest = &line[i..];
        if rest.starts_with("[[") && !in_code(i) {
            if let Some(close) = next(&wiki_ends, i + 2).map(|p| p - i).filter(|&c| c <= MAX_LINK + 2) {
                let inner = &rest[2..close];
                let (target, label) = match inner.split_once('|') {
                    Some((t, l)) => (t, Some(l)),
                    None => (inner, None),
                };
                if let Some((kind, name)) = target.split_once('/')
                    && lex::is_kind(kind)
                    && lex::is_name(name)
                    && registry::is_known_kind(kind)
                    && label.is_none_or(|l| !l.is_empty() && !l.contains(']'))
                {
                    out.push(ProseRef {
                        start: i,
                        end: i + close + 2,
                        kind: kind.to_string(),
                        name: name.to_string(),
                        label: label.unwrap_or(name).to_string(),
                        written: rest[..close + 2].to_string(),
                    });
                    i += close + 2;
                    continue;
                }
            }
        } else if rest.starts_with('[')
            && !in_code(i)
            && let Some(mid) = next(&frag_mids, i + 1).filter(|&m| m - i <= MAX_LINK + 1)
            && let Some(r) = fragment_ref(rest, i, mid - i)
        {
            i = r.end;
            out.push(r);
            continue;
        }
        i += rest.chars().next().map(char::len_utf8).unwrap_or(1);
    }
    out
}

/// `[Label](#kind/name)` starting at the beginning of `rest` (offset `at` in the line), whose
/// `](#` is at `close`.
fn fragment_ref(rest: &str, at: usize, close: usize) -> Option<ProseRef> {
    let label = &rest[1..close];
    if label.is_empty() || label.contains('[') || label.contains(']') {
        return None;
    }
    let after = &rest[close + 3..];
    let end = after
        .bytes()
        .take_while(|&c| c.is_ascii_alphanumeric() || matches!(c, b'/' | b'.' | b'_' | b'-'))
        .count();
    if !after[end..].starts_with(')') {
        return None;
    }
    let (kind, name) = after[..end].split_once('/')?;
    if !(lex::is_kind(kind) && lex::is_name(name) && registry::is_known_kind(kind)) {
        return None;
    }
    let len = close + 3 + end + 1;
    Some(ProseRef {
        start: at,
        end: at + len,
        kind: kind.to_string(),
        name: name.to_string(),
        label: label.to_string(),
        written: rest[..len].to_string(),
    })
}

/// `line` with its local references replaced by their labels.
pub(crate) fn render(line: &str) -> String {
    let refs = prose_refs(line);
    if refs.is_empty() {
        return line.to_string();
    }
    let mut out = String::with_capacity(line.len());
    let mut last = 0;
    for r in refs {
        out.push_str(&line[last..r.start]);
        out.push_str(&r.label);
        last = r.end;
    }
    out.push_str(&line[last..]);
    out
}
