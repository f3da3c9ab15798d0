//! The reminder frame in model input: `<system-reminder source=… id=…>body</system-reminder>`.
//! `render` writes one block (the agent loop appends them after the
//! conversation, in the user slot); `extract` finds them again (the echo
//! model uses it to show the reminders it was given).

/// One reminder block found in a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReminderBlock {
    pub source: String,
    pub id: String,
    pub body: String,
}

const OPEN: &str = "<system-reminder";
const CLOSE: &str = "</system-reminder>";

/// Renders one reminder block. Attribute values are quoted (a `"` inside
/// becomes `'`); the body goes in verbatim.
pub fn render(source: &str, id: &str, body: &str) -> String {
    let q = |v: &str| v.replace('"', "'");
    format!("{OPEN} source=\"{}\" id=\"{}\">{body}{CLOSE}", q(source), q(id))
}

/// Splits `text` into its reminder blocks and the text around them (blocks
/// removed, the rest trimmed). A malformed block is left as text.
pub fn extract(text: &str) -> (String, Vec<ReminderBlock>) {
    let mut rest = text;
    let mut plain = String::new();
    let mut blocks = Vec::new();
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let parsed = after.find('>').and_then(|gt| {
            let attrs = &after[..gt];
            let body_and_more = &after[gt + 1..];
            let end = body_and_more.find(CLOSE)?;
            let block = ReminderBlock {
                source: attr(attrs, "source").unwrap_or_default(),
                id: attr(attrs, "id").unwrap_or_default(),
                body: body_and_more[..end].trim().to_owned(),
            };
            let consumed = start + OPEN.len() + gt + 1 + end + CLOSE.len();
            // `<system-reminderX` is another tag, not ours.
            attrs.chars().next().is_none_or(char::is_whitespace).then_some((block, consumed))
        });
        match parsed {
            Some((block, consumed)) => {
                plain.push_str(&rest[..start]);
                blocks.push(block);
                rest = &rest[consumed..];
            }
            None => {
                plain.push_str(&rest[..start + OPEN.len()]);
                rest = &rest[start + OPEN.len()..];
            }
        }
    }
    plain.push_str(rest);
    (plain.trim().to_owned(), blocks)
}

/// The value of `name=` in an attribute list: `"quoted"`, `'quoted'` or bare.
fn attr(attrs: &str, name: &str) -> Option<String> {
    let mut s = attrs;
    loop {
        s = s.trim_start();
        if s.is_empty() {
            return None;
        }
        let eq = s.find('=')?;
        let key = s[..eq].trim();
        let v = s[eq + 1..].trim_start();
        let (value, rest) = match v.chars().next() {
            Some(q @ ('"' | '\'')) => match v[1..].find(q) {
                Some(close) => (&v[1..1 + close], &v[close + 2..]),
                None => (&v[1..], ""),
            },
            _ => {
                let end = v.find(char::is_whitespace).unwrap_or(v.len());
                (&v[..end], &v[end..])
            }
        };
        if key == name {
            return Some(value.to_owned());
        }
        s = rest;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_then_extract_round_trips() {
        let text = format!("hello\n\n{}\n{}", render("agent:boss", "r1", "be brief"), render("x", "r2", "b"));
        let (plain, blocks) = extract(&text);
        assert_eq!(plain, "hello");
        assert_eq!(blocks.len(), 2);
        assert_eq!(
            blocks[0],
            ReminderBlock { source: "agent:boss".into(), id: "r1".into(), body: "be brief".into() }
        );
        assert_eq!(blocks[1].id, "r2");
    }

    #[test]
    fn bare_attributes_and_malformed_blocks() {
        let (plain, blocks) = extract("<system-reminder source=ops id=7>use metric</system-reminder>");
        assert_eq!(plain, "");
        assert_eq!((blocks[0].source.as_str(), blocks[0].id.as_str()), ("ops", "7"));
        for bad in [
            "a <system-reminder id=1>never closed",
            "<system-reminders>x</system-reminder>",
            "<system-reminder",
        ] {
            let (plain, blocks) = extract(bad);
            assert!(blocks.is_empty(), "{bad}");
            assert_eq!(plain, bad.trim());
        }
    }
}
