//! Tool-name globs: `*` matches any run of characters, `?` one character.
//! Written here rather than taken from a glob crate: tool names are flat
//! identifiers (no path separators, classes or braces), and these two
//! wildcards are the whole language the configuration documents.

/// Whether `name` matches `pattern`.
pub fn matches(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // Greedy matching with one backtrack point: linear in practice, and
    // never worse than |p|·|n|.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// A server's allow and deny lists.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolFilter {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}

impl ToolFilter {
    /// Whether the agent may have the server's tool `name`.
    pub fn admits(&self, name: &str) -> bool {
        let allowed = self.allow.is_empty() || self.allow.iter().any(|g| matches(g, name));
        allowed && !self.deny.iter().any(|g| matches(g, name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_and_question_marks() {
        assert!(matches("*", ""));
        assert!(matches("read_*", "read_file"));
        assert!(!matches("read_*", "write_file"));
        assert!(matches("*_file", "read_file"));
        assert!(matches("r?ad*e", "read_file"));
        assert!(matches("*delete*", "delete_everything"));
        assert!(!matches("echo", "echo2"));
        assert!(matches("a*b*c", "aXbYbZc"));
        assert!(!matches("a*b*c", "aXbYbZ"));
    }

    #[test]
    fn deny_wins_over_allow_and_an_empty_allow_admits_all() {
        let f = ToolFilter { allow: vec![], deny: vec!["delete_*".into()] };
        assert!(f.admits("echo"));
        assert!(!f.admits("delete_everything"));
        let f = ToolFilter { allow: vec!["e*".into()], deny: vec!["echo".into()] };
        assert!(!f.admits("echo"));
        assert!(f.admits("eval"));
        assert!(!f.admits("add"));
    }
}
