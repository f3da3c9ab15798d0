//! Printing: data to stdout (flushed as it is written, so streamed text and
//! `watch` lines appear at once even through a pipe), diagnostics to stderr.

use super::exit;
use agentd_proto::{Artifact, Part, PartContent, StreamResponse, Task, TaskState, TaskStatus};
use serde_json::Value;
use std::io::Write;

/// Writes to stdout and flushes. A closed pipe (`agentd tasks list | head`)
/// ends the program quietly instead of with an error.
pub fn emit(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write to stdout")),
    }
}

/// One line on stdout.
pub fn line(text: &str) -> anyhow::Result<()> {
    if text.ends_with('\n') { emit(text) } else { emit(&format!("{text}\n")) }
}

pub fn json_pretty(v: &Value) -> anyhow::Result<()> {
    line(&serde_json::to_string_pretty(v)?)
}

/// One JSON document on one line (streams).
pub fn json_line(v: &Value) -> anyhow::Result<()> {
    line(&serde_json::to_string(v)?)
}

/// A diagnostic on stderr.
pub fn note(text: &str) {
    eprintln!("{text}");
}

/// `WORKING` for `TASK_STATE_WORKING`.
pub fn state_name(s: TaskState) -> &'static str {
    let full = s.as_str();
    full.strip_prefix("TASK_STATE_").unwrap_or(full)
}

/// Parses `working`, `input-required` or `TASK_STATE_WORKING` (clap value parser).
pub fn parse_state(s: &str) -> Result<TaskState, String> {
    let upper = s.trim().to_ascii_uppercase().replace('-', "_");
    let full = if upper.starts_with("TASK_STATE_") { upper } else { format!("TASK_STATE_{upper}") };
    match TaskState::from_name(&full) {
        Some(st) if st != TaskState::Unspecified => Ok(st),
        _ => {
            let names: Vec<String> = TaskState::ALL
                .iter()
                .filter(|st| **st != TaskState::Unspecified)
                .map(|st| state_name(*st).to_ascii_lowercase().replace('_', "-"))
                .collect();
            Err(format!("unknown task state; one of: {}", names.join(", ")))
        }
    }
}

/// The text of an artifact: its text parts concatenated, since streamed
/// chunks arrive as parts appended one after another.
pub fn artifact_text(a: &Artifact) -> String {
    a.parts.iter().filter_map(Part::as_text).collect()
}

/// Every part of an artifact, non-text parts shown as a short placeholder.
pub fn artifact_display(a: &Artifact) -> String {
    a.parts
        .iter()
        .map(|p| match &p.content {
            PartContent::Text(t) => t.to_string(),
            PartContent::Raw(b) if p.filename.is_empty() => format!("<{} bytes>", b.len()),
            PartContent::Raw(b) => format!("<{}: {} bytes>", p.filename, b.len()),
            PartContent::Url(u) => format!("<{u}>"),
            PartContent::Data(v) => v.to_string(),
        })
        .collect()
}

/// What the agent answered in a task: its artifacts' text, else the text
/// of its status message, else placeholders for non-text artifacts.
pub fn reply_text(task: &Task) -> Option<String> {
    joined_artifacts(task, artifact_text)
        .or_else(|| status_text(&task.status))
        .or_else(|| joined_artifacts(task, artifact_display))
}

/// What a task's artifacts hold (text, else placeholders), without its status message.
pub fn artifacts_text(task: &Task) -> Option<String> {
    joined_artifacts(task, artifact_text).or_else(|| joined_artifacts(task, artifact_display))
}

fn joined_artifacts(task: &Task, f: fn(&Artifact) -> String) -> Option<String> {
    let texts: Vec<String> = task.artifacts.iter().flatten().map(f).filter(|t| !t.is_empty()).collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

pub fn status_text(s: &TaskStatus) -> Option<String> {
    s.message.as_ref().map(|m| m.text()).filter(|t| !t.is_empty())
}

/// The status message to print after a streamed turn: the question of a
/// task waiting for input or authorization always (it is what the task
/// asks, not a repeat of its text), else only when nothing was printed.
pub fn status_after_stream(task: &Task, printed: bool) -> Option<String> {
    let st = task.status.state;
    let show = st.is_interrupted() || (!printed && exit::for_state(st).is_none());
    show.then(|| status_text(&task.status)).flatten()
}

/// Streamed artifact text, printed inline as it arrives (one line per
/// artifact, not per chunk); any other line closes the open one first.
#[derive(Default)]
pub struct Inline {
    /// The artifact whose text the cursor is on, if its line is still open.
    open: Option<String>,
    /// Something was printed.
    pub printed: bool,
}

impl Inline {
    pub fn artifact(&mut self, a: &Artifact) -> anyhow::Result<()> {
        let mut text = artifact_text(a);
        if text.is_empty() {
            // A file or data artifact: show a placeholder.
            text = artifact_display(a);
        }
        if text.is_empty() {
            return Ok(());
        }
        if self.open.as_deref() != Some(a.artifact_id.as_str()) {
            self.close()?;
        }
        emit(&text)?;
        self.printed = true;
        self.open = (!text.ends_with('\n')).then(|| a.artifact_id.clone());
        Ok(())
    }

    pub fn line(&mut self, text: &str) -> anyhow::Result<()> {
        self.close()?;
        self.printed = true;
        line(text)
    }

    pub fn close(&mut self) -> anyhow::Result<()> {
        if self.open.take().is_some() {
            emit("\n")?;
        }
        Ok(())
    }
}

/// `task <id>: <STATE> (context <id>)`, with a hint for what to do next.
pub fn task_summary(task: &Task) -> String {
    let mut s = format!("task {}: {}", task.id, state_name(task.status.state));
    if !task.context_id.is_empty() {
        s.push_str(&format!(" (context {})", task.context_id));
    }
    let st = task.status.state;
    if st.is_interrupted() {
        s.push_str(&format!(
            "\n  reply with: agentd send --task {id} TEXT (or agentd answer {id} ANSWER, JSON as data)",
            id = task.id
        ));
    } else if !st.is_terminal() {
        s.push_str(&format!("\n  follow it with: agentd tasks watch {}", task.id));
    } else if st == TaskState::Completed && !task.context_id.is_empty() {
        s.push_str(&format!(
            "\n  continue with: agentd send --continue TEXT (or --context {})",
            task.context_id
        ));
    }
    s
}

/// Folds a stream event into what is known of its task: id, context, status.
pub fn track(task: &mut Task, ev: &StreamResponse) {
    let (id, context, status) = match ev {
        StreamResponse::Task(t) => (&t.id, &t.context_id, &t.status),
        StreamResponse::StatusUpdate(u) => (&u.task_id, &u.context_id, &u.status),
        StreamResponse::ArtifactUpdate(_) | StreamResponse::Message(_) => return,
    };
    if task.id.is_empty() {
        task.id.clone_from(id);
        task.context_id.clone_from(context);
    }
    task.status = status.clone();
}

/// A stream that closed while its task was still running was cut short
/// (the daemon shut down, say): an error, so scripts do not take it for
/// the end of the task. A stream without a task (a direct message) is fine.
pub fn check_stream_end(task: &Task, interrupted_ends: bool) -> anyhow::Result<()> {
    let st = task.status.state;
    if task.id.is_empty() || st.is_terminal() || (interrupted_ends && st.is_interrupted()) {
        return Ok(());
    }
    anyhow::bail!(
        "the stream ended before task {} finished (last state {}); the daemon may have shut down\n  \
         follow it with: agentd tasks watch {}",
        task.id,
        state_name(st),
        task.id
    )
}

/// One row of a table in columns of the given widths (the last one takes
/// the rest of the line); a cell wider than its column pushes the next
/// ones right rather than being cut, so ids stay whole.
pub fn columns(widths: &[usize], cells: &[&str]) -> String {
    let mut s = String::new();
    for (i, cell) in cells.iter().enumerate() {
        match widths.get(i) {
            Some(w) if i + 1 < cells.len() => s.push_str(&format!("{cell:<w$}  ")),
            _ => s.push_str(cell),
        }
    }
    s.trim_end().to_owned()
}

/// A table: its header, then its rows, a line each; empty when there are no rows.
pub fn table(widths: &[usize], header: &[&str], rows: &[Vec<String>]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut s = columns(widths, header) + "\n";
    for row in rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        s.push_str(&columns(widths, &cells));
        s.push('\n');
    }
    s
}

/// A labelled line of a record (`state    COMPLETED`): a value over several
/// lines stays readable, indented under its label.
pub fn labelled(label: &str, value: &str) -> String {
    format!("{label:<8} {}\n", value.trim_end().replace('\n', "\n         "))
}

const SNIPPET_CHARS: usize = 48;

/// The start of a text on one line, `…` when cut.
pub fn snippet(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= SNIPPET_CHARS {
        return flat;
    }
    let cut: String = flat.chars().take(SNIPPET_CHARS - 1).collect();
    format!("{cut}…")
}

/// `COMPLETED` for a state's wire name (`TASK_STATE_COMPLETED`) in an op's answer.
pub fn state_text(v: &Value) -> &str {
    let s = v.as_str().unwrap_or("-");
    s.strip_prefix("TASK_STATE_").unwrap_or(s)
}

/// Keeps an event on one line: newlines are shown escaped.
pub fn one_line(text: &str) -> String {
    text.replace('\r', "\\r").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_parse_short_long_and_dashed() {
        assert_eq!(parse_state("working"), Ok(TaskState::Working));
        assert_eq!(parse_state("TASK_STATE_WORKING"), Ok(TaskState::Working));
        assert_eq!(parse_state("input-required"), Ok(TaskState::InputRequired));
        assert_eq!(parse_state("Input_Required"), Ok(TaskState::InputRequired));
        assert!(parse_state("unspecified").is_err());
        let e = parse_state("nope").unwrap_err();
        assert!(e.contains("input-required") && e.contains("canceled"), "{e}");
        assert_eq!(state_name(TaskState::AuthRequired), "AUTH_REQUIRED");
    }

    #[test]
    fn reply_text_prefers_artifacts_and_joins_chunks() {
        let mut t = Task::default();
        t.status.message = Some(agentd_proto::Message::agent_text("status"));
        assert_eq!(reply_text(&t).as_deref(), Some("status"));
        t.artifacts = Some(vec![Artifact {
            parts: vec![Part::text("echo: "), Part::text("hi")],
            ..Default::default()
        }]);
        assert_eq!(reply_text(&t).as_deref(), Some("echo: hi"));
        let file = Part { filename: "out.txt".into(), ..Part::raw(b"abc".to_vec()) };
        let t = Task {
            artifacts: Some(vec![Artifact { parts: vec![file], ..Default::default() }]),
            ..Default::default()
        };
        assert_eq!(reply_text(&t).as_deref(), Some("<out.txt: 3 bytes>"));
    }
}
