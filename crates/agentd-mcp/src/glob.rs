//! A server's `tools.allow`/`tools.deny` lists, over tool-name globs (`*`
//! any run of characters, `?` one character: the matcher of narrowing).

pub use agentd_runtime::narrowing::matches;

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
