//! Narrowing: which tools an agent may use, named by tool sets. A
//! subagent, or a workflow's `agent`/`subagent` step, may name the sets it
//! gets (`tools: [files, "tickets__read_*"]`); it can only narrow what its
//! parent had. A set is a tool's name (`files__read`), a glob over names
//! (`tickets__read_*`), or an MCP server's name (`files`: all its tools).
//! Enforced when a model call's tools are listed and again at dispatch
//! (`agent_loop/tools.rs`).

/// Whether `name` matches `pattern`: `*` matches any run of characters,
/// `?` one character. Written here rather than taken from a glob crate:
/// tool names are flat identifiers (no path separators, classes or
/// braces), and these two wildcards are the whole language the
/// configuration documents.
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

/// The tool sets of an agent and of each of its ancestors that named any:
/// a tool is admitted when every level names it. Empty: every tool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Narrowing(Vec<Vec<String>>);

impl Narrowing {
    /// The tool sets of each level, outermost first (kept in a subagent's
    /// checkpoint).
    pub(crate) fn levels(&self) -> &[Vec<String>] {
        &self.0
    }

    pub(crate) fn from_levels(levels: Vec<Vec<String>>) -> Narrowing {
        Narrowing(levels)
    }

    /// This narrowing, further narrowed to `sets`.
    pub fn then(&self, sets: &[String]) -> Narrowing {
        let mut levels = self.0.clone();
        levels.push(sets.to_vec());
        Narrowing(levels)
    }

    /// Whether the tool the model knows as `name` is admitted.
    pub fn admits(&self, name: &str) -> bool {
        self.0.iter().all(|sets| sets.iter().any(|s| names(s, name)))
    }
}

/// Whether the set `set` names the tool `name`.
fn names(set: &str, name: &str) -> bool {
    matches(set, name) || name.strip_prefix(set).is_some_and(|rest| rest.starts_with("__"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_set_is_a_name_a_glob_or_a_server_and_each_level_can_only_narrow() {
        let n = Narrowing::default();
        assert!(n.admits("anything"));
        let n = n.then(&sets(&["files", "tickets__read_*", "spawn_subagent"]));
        assert!(n.admits("files__read") && n.admits("files__delete"));
        assert!(n.admits("tickets__read_one") && !n.admits("tickets__write"));
        assert!(n.admits("spawn_subagent") && !n.admits("delegate"));
        assert!(!n.admits("filesystem__read"), "a server's name names its own tools only");
        // A child naming more than its parent had gets no more.
        let child = n.then(&sets(&["tickets", "files__read"]));
        assert!(child.admits("tickets__read_one") && !child.admits("tickets__write"));
        assert!(child.admits("files__read") && !child.admits("files__delete"));
        assert!(!Narrowing::default().then(&[]).admits("files__read"), "an empty list names nothing");
    }

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
}
