//! The steps of a workflow run as they start and end, on stderr, for
//! `agentd run` and `agentd answer`. They come from the events feed
//! (`step` events), which is opened before the run is started or resumed
//! so none is missed; the run task's own `task` events tell when the feed
//! has caught up with the state the run stopped in.

use super::ClientOpts;
use super::client::Client;
use super::output::note;
use agentd_proto::TaskState;
use agentd_proto::ext::events::{EventKind, Frame, METHOD, SubscribeParams, URI};
use serde_json::Value;
use std::time::Duration;
use tokio::sync::watch;

/// How long the feed may trail the run's own stream at the end.
const CATCH_UP: Duration = Duration::from_secs(2);
/// Events kept while the run's task id is not known yet.
const EARLY_EVENTS: usize = 64;

pub struct Steps {
    task: watch::Sender<String>,
    end: watch::Sender<Option<TaskState>>,
    handle: tokio::task::JoinHandle<()>,
}

impl Steps {
    /// Opens the feed; `None` (no progress, nothing else changes) when the
    /// daemon does not serve it to this caller.
    pub async fn follow(opts: &ClientOpts, task_id: Option<&str>) -> Option<Steps> {
        let client = Client::new(opts).ok()?.with_extensions(&[URI]).ok()?;
        let kinds = vec![EventKind::Task, EventKind::Step, EventKind::Run, EventKind::Gate];
        let params = SubscribeParams { from_seq: None, kinds: Some(kinds) };
        let mut frames = client.stream(METHOD, &params).await.ok()?;
        let (task, mut task_rx) = watch::channel(task_id.unwrap_or_default().to_owned());
        let (end, mut end_rx) = watch::channel(None::<TaskState>);
        // The CLI's client, not the daemon: nothing to track at a shutdown.
        #[allow(clippy::disallowed_methods)]
        let handle = tokio::spawn(async move {
            let mut early: Vec<Value> = Vec::new();
            // The run's last state the feed showed.
            let mut last: Option<TaskState> = None;
            // Run and gate events come from the run's own ordered writer,
            // after its step events and possibly after the task's change:
            // once the run showed any, wait for the one that closes the
            // stretch (the run ended, or a gate opened).
            let (mut workflow_seen, mut workflow_settled) = (false, false);
            loop {
                let frame = tokio::select! {
                    f = frames.next() => f,
                    changed = task_rx.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        let id = task_rx.borrow().clone();
                        for data in early.drain(..) {
                            if data["taskId"] == id.as_str() {
                                print_step(&data);
                            }
                        }
                        continue;
                    }
                    changed = end_rx.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        if settled(last, *end_rx.borrow(), workflow_seen, workflow_settled) {
                            return;
                        }
                        continue;
                    }
                };
                let Ok(Some(v)) = frame else { return };
                let Ok(Frame::Event(e)) = serde_json::from_value::<Frame>(v) else { continue };
                let id = task_rx.borrow().clone();
                match e.kind {
                    EventKind::Step if id.is_empty() && early.len() < EARLY_EVENTS => early.push(e.data),
                    EventKind::Step if e.data["taskId"] == id.as_str() => {
                        workflow_seen = true;
                        print_step(&e.data);
                    }
                    EventKind::Run | EventKind::Gate if e.data["taskId"] == id.as_str() => {
                        workflow_seen = true;
                        let ended = e.data["state"].as_str().is_some_and(|s| s != "started");
                        workflow_settled = ended || e.data["action"] == "opened";
                    }
                    EventKind::Task if e.data["id"] == id.as_str() => {
                        last = e.data["status"]["state"].as_str().and_then(TaskState::from_name);
                    }
                    _ => continue,
                }
                if settled(last, *end_rx.borrow(), workflow_seen, workflow_settled) {
                    return;
                }
            }
        });
        Some(Steps { task, end, handle })
    }

    /// The run's task id, once the run's stream names it.
    pub fn task(&self, id: &str) {
        if *self.task.borrow() != id {
            let _ = self.task.send(id.to_owned());
        }
    }

    /// Waits (briefly) until the feed has shown the run reaching `state`,
    /// so the steps before it are printed, then closes the feed.
    pub async fn finish(self, state: TaskState) {
        let _ = self.end.send(Some(state));
        let mut handle = self.handle;
        if tokio::time::timeout(CATCH_UP, &mut handle).await.is_err() {
            handle.abort();
        }
    }
}

/// The run reached `end` and the feed showed everything before it.
fn settled(
    last: Option<TaskState>,
    end: Option<TaskState>,
    workflow_seen: bool,
    workflow_settled: bool,
) -> bool {
    last.is_some() && last == end && (!workflow_seen || workflow_settled)
}

/// `step summarize (agent): running`, `step fetch (a2a.delegate): failed: <error>`.
fn print_step(data: &Value) {
    let s = |k: &str| data[k].as_str().unwrap_or("?");
    let mut line = format!("step {} ({}): {}", s("step"), s("kind"), s("status"));
    if let Some(e) = data["error"].as_str() {
        line.push_str(&format!(": {e}"));
    }
    note(&line);
}
