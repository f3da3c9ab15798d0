//! `${param}` substitution: declared parameters only, the context value else the default,
//! capped and inserted as plain text (never re-parsed).

use super::{MAX_PARAM_VALUE, Renderer};

impl Renderer<'_> {
    /// Replaces `${name}` for declared parameters: the context value, else the default.
    pub(super) fn substitute(&mut self, line: &str) -> String {
        let mut out = String::with_capacity(line.len());
        let mut rest = line;
        while let Some(pos) = rest.find("${") {
            out.push_str(&rest[..pos]);
            let after = &rest[pos + 2..];
            let len = after
                .bytes()
                .take_while(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
                .count();
            let name = &after[..len];
            let closed = after.as_bytes().get(len) == Some(&b'}');
            let valid =
                closed && name.as_bytes().first().is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_');
            let param = self.params.iter().find(|p| valid && p.name == name);
            let value = param.and_then(|p| self.ctx.params.get(name).cloned().or_else(|| p.default.clone()));
            match (param, value) {
                (Some(_), Some(v)) => {
                    out.push_str(cap(&v));
                    rest = &after[len + 1..];
                }
                (Some(p), None) => {
                    if p.required {
                        let msg = format!(
                            "required parameter \"{name}\" has no value; ${{{name}}} is left as written"
                        );
                        if !self.advisories.contains(&msg) {
                            self.advisories.push(msg);
                        }
                    }
                    out.push_str("${");
                    rest = after;
                }
                (None, _) => {
                    out.push_str("${");
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }
}

fn cap(v: &str) -> &str {
    if v.len() <= MAX_PARAM_VALUE {
        return v;
    }
    let mut end = MAX_PARAM_VALUE;
    while !v.is_char_boundary(end) {
        end -= 1;
    }
    &v[..end]
}

/// `${name}` references in `text`, in order.
pub(super) fn param_refs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(pos) = rest.find("${") {
        let after = &rest[pos + 2..];
        let len = after
            .bytes()
            .take_while(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
            .count();
        if len > 0 && after.as_bytes().get(len) == Some(&b'}') {
            out.push(after[..len].to_string());
        }
        rest = after;
    }
    out
}
