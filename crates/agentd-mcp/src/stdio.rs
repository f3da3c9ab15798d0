//! Stdio servers: the child process and what it says on stderr. The child
//! is the leader of its own process group, killed as a group when its
//! connection is dropped (a server that starts helpers takes them along)
//! and when the daemon drops it at exit; a child of a daemon killed hard
//! sees its stdin close. Its stderr goes to the log line by line, and the
//! last lines are kept for the error a failed handshake reports.

use crate::server::StdioSpec;
use agentd_core::Background;
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::transport::TokioChildProcess;
use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::task::JoinHandle;

/// The stderr lines kept for a handshake error.
const TAIL_LINES: usize = 20;
/// The longest stderr line kept or logged, in bytes.
const MAX_LINE: usize = 2048;

/// The last lines a child wrote to stderr.
#[derive(Clone, Default)]
pub struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
}

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The lines, joined; empty when the child said nothing.
    pub fn text(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        lines.iter().cloned().collect::<Vec<_>>().join("\n")
    }
}

/// A spawned child: its transport, its stderr tail and the task reading it
/// (which ends when the child closes stderr).
pub struct Child {
    pub transport: TokioChildProcess,
    pub stderr: StderrTail,
    pub reader: JoinHandle<()>,
}

pub fn spawn(server: &str, spec: &StdioSpec, background: &Background) -> std::io::Result<Child> {
    let mut cmd = tokio::process::Command::new(&spec.command);
    cmd.args(&spec.args).envs(spec.env.iter().map(|(k, v)| (k, v)));
    let mut wrap = CommandWrap::from(cmd);
    wrap.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    let (transport, stderr) = TokioChildProcess::builder(wrap).stderr(Stdio::piped()).spawn()?;
    let tail = StderrTail::default();
    let reader = {
        let tail = tail.clone();
        let server = server.to_owned();
        background.spawn(async move {
            let Some(stderr) = stderr else { return };
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(mut line)) = lines.next_line().await {
                if line.len() > MAX_LINE {
                    let mut at = MAX_LINE;
                    while !line.is_char_boundary(at) {
                        at -= 1;
                    }
                    line.truncate(at);
                }
                tracing::info!(mcp_server = %server, "stderr: {line}");
                tail.push(line);
            }
        })
    };
    Ok(Child { transport, stderr: tail, reader })
}
