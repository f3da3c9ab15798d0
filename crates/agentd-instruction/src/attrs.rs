//! Attribute lists (`{name=x title="a b" required}`): tokenising, refusals, normalisation.

use crate::lex;
use crate::model::{AttrValue, Attrs};
use crate::params;
use crate::registry::{AttrType, KindSpec};

/// One written attribute: a lower-case key and its raw value (`None` for a bare key).
pub(crate) type RawAttr = (String, Option<String>);

/// A token of an attribute list, in the order written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token {
    Attr(RawAttr),
    Error(String),
}

fn is_key_start(c: char) -> bool {
    c.is_ascii_alphabetic()
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

fn malformed(found: &str) -> String {
    format!("attributes: expected key=value, found \"{found}\" — quote values with spaces")
}

/// Tokenises an attribute list. Bare keys are kept as `None` values; the caller decides
/// whether they are flags. Every problem is one error token, in the order written (an `#id`
/// shorthand explanation comes first).
pub(crate) fn tokenize(text: &str) -> Vec<Token> {
    let mut errors = Vec::new();
    // `#id` shorthand gets its own explanation before the token-level messages.
    for word in text.split_whitespace() {
        if let Some(id) = word.strip_prefix('#')
            && lex::is_name(id)
        {
            errors.push(format!("\"{word}\" is not an attribute — identity is name={id}"));
        }
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<Token> = errors.drain(..).map(Token::Error).collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if !is_key_start(c) {
            let start = i;
            while i < chars.len() && !chars[i].is_whitespace() && !is_key_start(chars[i]) {
                i += 1;
            }
            out.push(Token::Error(malformed(&chars[start..i].iter().collect::<String>())));
            continue;
        }
        let start = i;
        while i < chars.len() && is_key_char(chars[i]) {
            i += 1;
        }
        let key: String = chars[start..i].iter().collect::<String>().to_ascii_lowercase();
        if i < chars.len() && chars[i] == '=' {
            i += 1;
            if i < chars.len() && chars[i] == '"' {
                i += 1;
                let mut value = String::new();
                let mut closed = false;
                while i < chars.len() {
                    match chars[i] {
                        '\\' if matches!(chars.get(i + 1), Some('"' | '\\')) => {
                            value.push(chars[i + 1]);
                            i += 2;
                        }
                        '"' => {
                            closed = true;
                            i += 1;
                            break;
                        }
                        other => {
                            value.push(other);
                            i += 1;
                        }
                    }
                }
                if !closed {
                    let msg = format!("attributes: the quoted value of \"{key}\" is never closed — add a \"");
                    out.push(Token::Error(msg));
                }
                out.push(Token::Attr((key, Some(value))));
            } else {
                let vstart = i;
                while i < chars.len() && !chars[i].is_whitespace() {
                    i += 1;
                }
                let value: String = chars[vstart..i].iter().collect();
                if value.is_empty() {
                    let msg =
                        format!("attributes: \"{key}=\" has no value — write {key}=\"\" for an empty one");
                    out.push(Token::Error(msg));
                } else if value.contains('"') {
                    out.push(Token::Error(malformed(&value)));
                }
                out.push(Token::Attr((key, Some(value))));
            }
        } else {
            out.push(Token::Attr((key, None)));
        }
    }
    out
}

/// Normalises raw attributes for `spec`: repeated keys, unknown keys, flags, lists.
/// Returns the attributes and the refusal messages.
pub(crate) fn normalise(tokens: Vec<Token>, spec: &KindSpec) -> (Attrs, Vec<(&'static str, String)>) {
    let mut attrs = Attrs::default();
    let mut errors = Vec::new();
    let mut seen: std::collections::HashSet<String> = Default::default();
    for token in tokens {
        let (key, value) = match token {
            Token::Error(e) => {
                errors.push(("malformed-attributes", e));
                continue;
            }
            Token::Attr(a) => a,
        };
        if !seen.insert(key.clone()) {
            errors.push(("repeated-attribute", format!("attribute \"{key}\" is repeated")));
            continue;
        }
        let Some(ty) = spec.attr_type(&key) else {
            match value {
                None => errors.push(("malformed-attributes", malformed(&key))),
                Some(_) => errors.push(("unknown-attribute", unknown(&key, spec))),
            }
            continue;
        };
        let ty = if spec.attrs.is_none() && value.is_none() { AttrType::Flag } else { ty };
        match params::typed(ty, value.as_deref()) {
            // Keys are unique here, so pushing keeps this linear.
            Ok(AttrValue::Bool(b)) if spec.attrs.is_none() => {
                attrs.0.push((key, AttrValue::Str(b.to_string())))
            }
            Ok(v) => attrs.0.push((key, v)),
            Err(()) if value.is_none() => errors.push(("malformed-attributes", malformed(&key))),
            Err(()) => {
                errors.push(("invalid-attribute", format!("attribute \"{key}\" must be true or false")))
            }
        }
    }
    (attrs, errors)
}

/// `"channel_id" is not an attribute of human`.
pub(crate) fn unknown(key: &str, spec: &KindSpec) -> String {
    format!("\"{key}\" is not an attribute of {}", spec.name)
}
