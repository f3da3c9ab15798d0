//! Line-level lexical grammar: fences, leaves, section headings, keywords, alerts, code fences.
//!
//! Everything is recognised at column 0 only (code fences excepted, which follow CommonMark's
//! up-to-three-spaces rule so that suspension matches what a Markdown viewer shows).

use crate::registry::KEYWORDS;

/// A container or set opening line: `:::!kind[]{attrs}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fence<'a> {
    pub colons: usize,
    pub sigil: bool,
    pub kind: &'a str,
    pub set: bool,
    /// The text between the outer braces, if an attribute list was given.
    pub attrs: Option<&'a str>,
}

/// A sigiled section heading: `## !kind name {attrs}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Section<'a> {
    pub level: usize,
    pub kind: &'a str,
    pub name: &'a str,
    pub attrs: Option<&'a str>,
}

fn is_kind_start(b: u8) -> bool {
    b.is_ascii_alphabetic()
}

fn is_kind_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

pub(crate) fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || c == b'-')
}

pub(crate) fn is_kind(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty() && is_kind_start(b[0]) && b.iter().all(|&c| is_kind_char(c))
}

pub(crate) fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// What follows the colons and sigil: the kind, whether it is a set, the attribute text.
type Tail<'a> = (&'a str, bool, Option<&'a str>);

/// `kind`, optional `[]`, optional `{attrs}` after `pos`; `Err` if anything else trails.
fn kind_tail(line: &str, mut pos: usize, allow_set: bool) -> Option<Result<Tail<'_>, ()>> {
    let b = line.as_bytes();
    if pos >= b.len() || !is_kind_start(b[pos]) {
        return None;
    }
    let start = pos;
    while pos < b.len() && is_kind_char(b[pos]) {
        pos += 1;
    }
    let kind = &line[start..pos];
    let mut set = false;
    if line[pos..].starts_with("[]") {
        if !allow_set {
            return Some(Err(()));
        }
        set = true;
        pos += 2;
    }
    let rest = line[pos..].trim();
    if rest.is_empty() {
        return Some(Ok((kind, set, None)));
    }
    if rest.len() >= 2 && rest.starts_with('{') && rest.ends_with('}') {
        return Some(Ok((kind, set, Some(&rest[1..rest.len() - 1]))));
    }
    Some(Err(()))
}

/// A container/set opening fence. `Some(Err)` is a line that starts like one but is malformed.
pub(crate) fn open_fence(line: &str) -> Option<Result<Fence<'_>, ()>> {
    let colons = line.bytes().take_while(|&b| b == b':').count();
    if colons < 3 {
        return None;
    }
    let sigil = line.as_bytes().get(colons) == Some(&b'!');
    let pos = colons + usize::from(sigil);
    match kind_tail(line, pos, true)? {
        Ok((kind, set, attrs)) => Some(Ok(Fence { colons, sigil, kind, set, attrs })),
        Err(()) => Some(Err(())),
    }
}

/// A leaf: `::!kind{attrs}` (exactly two colons).
pub(crate) fn leaf(line: &str) -> Option<Result<Fence<'_>, ()>> {
    let colons = line.bytes().take_while(|&b| b == b':').count();
    if colons != 2 {
        return None;
    }
    let sigil = line.as_bytes().get(2) == Some(&b'!');
    match kind_tail(line, 2 + usize::from(sigil), false)? {
        Ok((kind, _, attrs)) => Some(Ok(Fence { colons, sigil, kind, set: false, attrs })),
        Err(()) => Some(Err(())),
    }
}

/// A closing fence: a line of three or more colons alone. Returns the colon count.
pub(crate) fn close_fence(line: &str) -> Option<usize> {
    let colons = line.bytes().take_while(|&b| b == b':').count();
    (colons >= 3 && line[colons..].trim().is_empty()).then_some(colons)
}

/// A would-be closing fence of at least `n` colons followed by text (`::: done`).
pub(crate) fn close_with_text(line: &str, n: usize) -> bool {
    let colons = line.bytes().take_while(|&b| b == b':').count();
    colons >= n
        && line.as_bytes().get(colons).is_some_and(|b| *b == b' ' || *b == b'\t')
        && !line[colons..].trim().is_empty()
}

/// An ATX heading's level.
pub(crate) fn heading_level(line: &str) -> Option<usize> {
    let n = line.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&n) {
        return None;
    }
    match line.as_bytes().get(n) {
        None | Some(b' ') | Some(b'\t') => Some(n),
        _ => None,
    }
}

/// A sigiled section heading. `Some(Err)` is a heading with a `!` that is not well formed.
pub(crate) fn section(line: &str) -> Option<Result<Section<'_>, ()>> {
    let level = heading_level(line)?;
    let after = &line[level..];
    let trimmed = after.trim_start();
    if !trimmed.starts_with('!') {
        return None;
    }
    let body = &trimmed[1..];
    let b = body.as_bytes();
    let mut pos = 0;
    if b.is_empty() || !is_kind_start(b[0]) {
        return Some(Err(()));
    }
    while pos < b.len() && is_kind_char(b[pos]) {
        pos += 1;
    }
    let kind = &body[..pos];
    let rest = &body[pos..];
    if !rest.starts_with([' ', '\t']) {
        return Some(Err(()));
    }
    let rest = rest.trim_start();
    let name_len = rest
        .bytes()
        .take_while(|&c| c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || c == b'-')
        .count();
    let name = &rest[..name_len];
    if !is_name(name) {
        return Some(Err(()));
    }
    let mut tail = rest[name_len..].trim();
    // Optional closing sequence of #s.
    tail = tail.trim_end_matches('#').trim_end();
    if tail.is_empty() {
        return Some(Ok(Section { level, kind, name, attrs: None }));
    }
    if tail.len() >= 2 && tail.starts_with('{') && tail.ends_with('}') {
        return Some(Ok(Section { level, kind, name, attrs: Some(&tail[1..tail.len() - 1]) }));
    }
    Some(Err(()))
}

/// The length of a list-item marker (`- `, `1. `) at the start of `line`, if any.
pub(crate) fn list_marker(line: &str) -> Option<usize> {
    let b = line.as_bytes();
    let mut pos = if matches!(b.first(), Some(b'-' | b'*' | b'+')) {
        1
    } else {
        let d = b.iter().take_while(|c| c.is_ascii_digit()).count();
        if d == 0 || d > 9 || !matches!(b.get(d), Some(b'.' | b')')) {
            return None;
        }
        d + 1
    };
    let ws = b[pos..].iter().take_while(|&&c| c == b' ' || c == b'\t').count();
    if ws == 0 {
        return None;
    }
    pos += ws;
    Some(pos)
}

/// A keyword line: `MUST: …` (optionally in a list item, optionally bold).
/// Returns (bytes before the keyword, the keyword as written, byte where the text starts).
pub(crate) fn keyword(line: &str) -> Option<(usize, &'static str, usize)> {
    let prefix = list_marker(line).unwrap_or(0);
    let mut pos = prefix;
    let rest = &line[pos..];
    let bold = rest.starts_with("**");
    if bold {
        pos += 2;
    }
    let (word, _) = KEYWORDS.iter().find(|(w, _)| line[pos..].starts_with(&format!("{w}:")))?;
    pos += word.len() + 1;
    if line[pos..].starts_with("**") {
        pos += 2;
    }
    let ws = line.as_bytes()[pos..].iter().take_while(|&&c| c == b' ' || c == b'\t').count();
    if ws == 0 {
        return None;
    }
    Some((prefix, word, pos + ws))
}

/// An alert opening line: `> [!TIP]`. Returns the keyword word it maps through.
pub(crate) fn alert(line: &str) -> Option<&'static str> {
    let rest = line.strip_prefix('>')?.trim_start_matches([' ', '\t']);
    let rest = rest.strip_prefix("[!")?;
    let end = rest.find(']')?;
    let word = &rest[..end];
    if word.is_empty() || !word.bytes().all(|b| b.is_ascii_alphabetic()) || !rest[end + 1..].trim().is_empty()
    {
        return None;
    }
    let upper = word.to_ascii_uppercase();
    KEYWORDS.iter().find(|(w, _)| *w == upper).map(|(w, _)| *w)
}

/// The text of a blockquote line with its `>` marker (and one following space) removed.
pub(crate) fn unquote(line: &str) -> &str {
    let rest = line.strip_prefix('>').unwrap_or(line);
    rest.strip_prefix(' ').unwrap_or(rest)
}

/// A code fence opening: (fence char, run length, info string).
pub(crate) fn code_open(line: &str) -> Option<(u8, usize, &str)> {
    let indent = line.bytes().take_while(|&b| b == b' ').count();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let ch = *rest.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let n = rest.bytes().take_while(|&b| b == ch).count();
    if n < 3 {
        return None;
    }
    let info = rest[n..].trim();
    if ch == b'`' && info.contains('`') {
        return None;
    }
    Some((ch, n, info))
}

/// Whether `line` closes a code fence opened with `n` × `ch`.
pub(crate) fn code_close(line: &str, ch: u8, n: usize) -> bool {
    let indent = line.bytes().take_while(|&b| b == b' ').count();
    if indent > 3 {
        return false;
    }
    let rest = &line[indent..];
    let m = rest.bytes().take_while(|&b| b == ch).count();
    m >= n && rest[m..].trim().is_empty()
}

/// Tracks code-fence suspension across consecutive lines.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CodeState {
    open: Option<(u8, usize)>,
}

impl CodeState {
    /// Feeds one line; returns true if the line is part of a code fence (fence lines included).
    pub(crate) fn feed(&mut self, line: &str) -> bool {
        match self.open {
            Some((ch, n)) => {
                if code_close(line, ch, n) {
                    self.open = None;
                }
                true
            }
            None => match code_open(line) {
                Some((ch, n, _)) => {
                    self.open = Some((ch, n));
                    true
                }
                None => false,
            },
        }
    }

    pub(crate) fn inside(&self) -> bool {
        self.open.is_some()
    }
}
