//! Literal-credential detection: well-known secret shapes anywhere in a document are refused.

/// A credential shape: (prefix, minimum length of the token after it, allowed token bytes, what it is).
type Shape = (&'static str, usize, fn(u8) -> bool, &'static str);

const SHAPES: &[Shape] = &[
    ("sk-", 20, token_byte, "API key"),
    ("sk_live_", 16, token_byte, "API key"),
    ("rk_live_", 16, token_byte, "API key"),
    ("ghp_", 20, alnum, "GitHub token"),
    ("gho_", 20, alnum, "GitHub token"),
    ("ghs_", 20, alnum, "GitHub token"),
    ("ghu_", 20, alnum, "GitHub token"),
    ("github_pat_", 20, token_byte, "GitHub token"),
    ("glpat-", 20, token_byte, "GitLab token"),
    ("xoxb-", 10, token_byte, "Slack token"),
    ("xoxp-", 10, token_byte, "Slack token"),
    ("AKIA", 16, upper_alnum, "AWS access key"),
];

fn token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn upper_alnum(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

/// What kind of credential `line` holds, if any.
pub(crate) fn find(line: &str) -> Option<&'static str> {
    if line.contains("-----BEGIN") && line.contains("PRIVATE KEY-----") {
        return Some("private key");
    }
    let b = line.as_bytes();
    for (prefix, min, ok, what) in SHAPES {
        let mut from = 0;
        while let Some(pos) = line[from..].find(prefix).map(|p| p + from) {
            let boundary = pos == 0 || !b[pos - 1].is_ascii_alphanumeric();
            let start = pos + prefix.len();
            let run = b[start..].iter().take_while(|&&c| ok(c)).count();
            if boundary && run >= *min {
                return Some(what);
            }
            from = start;
        }
    }
    None
}
