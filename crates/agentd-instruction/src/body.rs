//! Structured bodies: pipe tables, definition lists and the single fenced code block.

use crate::lex;
use crate::model::{Attrs, Entry};

/// A parsed pipe table: headers as written and data rows (1-based line, cells).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<(usize, Vec<String>)>,
}

/// `(1-based line, text)` pairs with blank lines at both ends removed.
fn trimmed<'a>(lines: &[(usize, &'a str)]) -> Vec<(usize, &'a str)> {
    let first = lines.iter().position(|(_, l)| !lex::is_blank(l));
    let last = lines.iter().rposition(|(_, l)| !lex::is_blank(l));
    match (first, last) {
        (Some(a), Some(b)) => lines[a..=b].to_vec(),
        _ => Vec::new(),
    }
}

fn split_cells(line: &str) -> Vec<String> {
    let inner = line.trim();
    let inner = inner.strip_prefix('|').unwrap_or(inner);
    let inner =
        if inner.ends_with('|') && !inner.ends_with("\\|") { &inner[..inner.len() - 1] } else { inner };
    let mut cells = Vec::new();
    let mut cur = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cur.push('|');
                chars.next();
            }
            '|' => cells.push(std::mem::take(&mut cur).trim().to_string()),
            other => cur.push(other),
        }
    }
    cells.push(cur.trim().to_string());
    cells
}

fn is_separator(cells: &[String]) -> bool {
    !cells.is_empty()
        && cells.iter().all(|c| {
            let c = c.trim();
            let c = c.strip_prefix(':').unwrap_or(c);
            let c = c.strip_suffix(':').unwrap_or(c);
            !c.is_empty() && c.bytes().all(|b| b == b'-')
        })
}

/// Parses a body that must be entirely a pipe table.
pub(crate) fn table(lines: &[(usize, &str)]) -> Result<Table, String> {
    let lines = trimmed(lines);
    if lines.len() < 2 || !lines.iter().all(|(_, l)| l.trim_start().starts_with('|')) {
        return Err("not a table".into());
    }
    let headers = split_cells(lines[0].1);
    if !is_separator(&split_cells(lines[1].1)) {
        return Err("the second line of a table must be its |---| separator".into());
    }
    let mut rows = Vec::new();
    for (n, (line, text)) in lines[2..].iter().enumerate() {
        let cells = split_cells(text);
        if cells.len() > headers.len() {
            return Err(format!(
                "row {} has {} cells but the header has {}",
                n + 1,
                cells.len(),
                headers.len()
            ));
        }
        rows.push((*line, cells));
    }
    Ok(Table { headers, rows })
}

/// Parses a body that must be entirely a definition list. `names` restricts terms to names
/// with an optional `{attrs}` (set members); otherwise a term is any line (a glossary).
/// Returns the entries and, per entry, the raw attribute text of its term.
pub(crate) fn deflist(lines: &[(usize, &str)], names: bool) -> Result<Vec<(Entry, Option<String>)>, String> {
    let lines = trimmed(lines);
    if lines.is_empty() {
        return Err("empty".into());
    }
    let mut out: Vec<(Entry, Option<String>)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let (line, text) = lines[i];
        if lex::is_blank(text) {
            i += 1;
            continue;
        }
        if text.starts_with([':', ' ', '\t']) {
            return Err(format!("line {line}: expected a term"));
        }
        let (term, attrs) = if names {
            let t = text.trim();
            let (name, rest) = match t.find(|c: char| c.is_whitespace() || c == '{') {
                Some(p) => (&t[..p], t[p..].trim()),
                None => (t, ""),
            };
            if !lex::is_name(name) {
                return Err(format!("line {line}: \"{name}\" is not a name"));
            }
            let attrs = if rest.is_empty() {
                None
            } else if rest.len() >= 2 && rest.starts_with('{') && rest.ends_with('}') {
                Some(rest[1..rest.len() - 1].to_string())
            } else {
                return Err(format!("line {line}: unexpected text after the term"));
            };
            (name.to_string(), attrs)
        } else {
            (text.trim().to_string(), None)
        };
        i += 1;
        let mut defs: Vec<String> = Vec::new();
        while i < lines.len() {
            let t = lines[i].1;
            if let Some(rest) = t.strip_prefix(':')
                && rest.starts_with([' ', '\t'])
            {
                defs.push(rest.trim().to_string());
            } else if !lex::is_blank(t) && t.starts_with([' ', '\t']) && !defs.is_empty() {
                defs.push(t.trim().to_string());
            } else {
                break;
            }
            i += 1;
        }
        if defs.is_empty() {
            return Err(format!("line {line}: the term \"{term}\" has no \":   definition\" line"));
        }
        let entry = Entry { term, attrs: Attrs::default(), definition: defs.join("\n"), line };
        out.push((entry, attrs));
    }
    Ok(out)
}

/// The fenced code blocks among `lines`: (1-based first content line, info, content lines).
pub(crate) fn code_blocks<'a>(lines: &[(usize, &'a str)]) -> Vec<(usize, String, Vec<&'a str>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some((ch, n, info)) = lex::code_open(lines[i].1) {
            let start = i + 1;
            let mut j = start;
            while j < lines.len() && !lex::code_close(lines[j].1, ch, n) {
                j += 1;
            }
            let first = lines.get(start).map(|l| l.0).unwrap_or(lines[i].0 + 1);
            out.push((
                first,
                info.to_string(),
                lines[start..j.min(lines.len())].iter().map(|l| l.1).collect(),
            ));
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// The lines outside any fenced code block.
pub(crate) fn outside_code<'a>(lines: &[(usize, &'a str)]) -> Vec<(usize, &'a str)> {
    let mut code = lex::CodeState::default();
    lines.iter().filter(|(_, l)| !code.feed(l)).copied().collect()
}
