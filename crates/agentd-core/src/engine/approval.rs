//! Waiting for a tool call's approval (`crate::approval`): one commit opens
//! the gate (INPUT_REQUIRED with the question, the pending record, the open
//! gate and its announcement's outbox row); the answer (`send.rs`) or the
//! deadline records the decision; the waiting call takes it with one more
//! commit that removes the record.

use super::{Engine, refused};
use crate::approval::{self, ApprovalOutcome, ApprovalRequest, Decision, PendingApproval};
use crate::error::Error;
use crate::gate::GateAnnouncement;
use crate::record::OpenGate;
use crate::store::Batch;
use crate::transition::{self, Change, Refused};
use agentd_proto::{Message, TaskState};
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

fn now_ms() -> i64 {
    agentd_proto::Timestamp::now().millis()
}

impl Engine {
    /// Asks for the approval of `req` on task `id` and waits for it. A
    /// pending approval of the same tool and arguments already recorded on
    /// the task (a turn resumed after a restart) is waited on, not asked
    /// again. Errors: the task ended (or is gone), or a commit failed.
    pub(crate) async fn await_approval(
        &self,
        id: &str,
        cancel: &CancellationToken,
        req: ApprovalRequest,
    ) -> Result<ApprovalOutcome, Error> {
        let hash = approval::args_hash(&req.arguments);
        let rec = self.record(id).await?.ok_or_else(|| Error::task_not_found(id))?;
        let same = |p: &PendingApproval| {
            p.tool == req.tool && p.args_hash == hash && p.interrupted == req.interrupted
        };
        if !rec.meta.approval.as_ref().is_some_and(same) {
            self.open_approval(id, &req, &hash).await?;
        }
        loop {
            // Subscribed before the record is read: no change slips between.
            let mut changes = match self.slot(id).await? {
                Some(slot) => slot.subscribe(),
                None => return Err(self.ended(id).await),
            };
            let rec = self.record(id).await?.ok_or_else(|| Error::task_not_found(id))?;
            if rec.state().is_terminal() {
                return Err(refused(id, Refused::Terminal(rec.state())));
            }
            let Some(pending) = rec.meta.approval.clone().filter(same) else {
                return Err(Error::Internal(format!("the approval of {} on task {id} is gone", req.tool)));
            };
            if let Some(decision) = pending.decision.clone() {
                return self.take_decision(id, &pending, decision).await;
            }
            let left = pending.deadline_ms - now_ms();
            if left <= 0 {
                self.deny_at_deadline(id, &hash).await?;
                continue;
            }
            tokio::select! {
                () = cancel.cancelled() => return Err(self.ended(id).await),
                () = tokio::time::sleep(Duration::from_millis(left as u64)) => {}
                r = changes.recv() => if let Err(RecvError::Closed) = r {
                    // The slot left the map: look the task up again.
                    tokio::task::yield_now().await;
                },
            }
        }
    }

    /// Like `settled`, but a task waiting for a tool call's approval is
    /// still at work: waits on until it ends or waits for anything else
    /// (a parent waiting on a subagent whose call waits for an approval).
    pub(crate) async fn settled_past_approvals(&self, id: &str) -> Result<crate::record::TaskRecord, Error> {
        loop {
            // Subscribed before `settled` reads: a change after it is seen.
            let changes = self.slot(id).await?.map(|s| s.subscribe());
            let rec = self.settled(id).await?;
            let approving = rec.state() == TaskState::InputRequired
                && rec.meta.approval.as_ref().is_some_and(|a| a.decision.is_none());
            match changes {
                Some(mut changes) if approving => {
                    let _ = changes.recv().await;
                }
                _ => return Ok(rec),
            }
        }
    }

    /// Waits until task `id` is terminal, through its waits for input (a
    /// workflow run's human gates, answered by a person). A task no longer
    /// live that is not terminal is returned as it is.
    pub(crate) async fn terminal(&self, id: &str) -> Result<crate::record::TaskRecord, Error> {
        loop {
            // Subscribed before `settled` reads: a change after it is seen.
            let changes = self.slot(id).await?.map(|s| s.subscribe());
            let rec = self.settled(id).await?;
            match changes {
                Some(mut changes) if !rec.state().is_terminal() => {
                    if let Err(RecvError::Closed) = changes.recv().await {
                        // The slot left the map: look the task up again.
                        tokio::task::yield_now().await;
                    }
                }
                _ => return Ok(rec),
            }
        }
    }

    /// Why waiting stopped: the task ended or is gone.
    async fn ended(&self, id: &str) -> Error {
        match self.record(id).await {
            Ok(Some(rec)) if rec.state().is_terminal() => refused(id, Refused::Terminal(rec.state())),
            Ok(_) => Error::task_not_found(id),
            Err(e) => e,
        }
    }

    /// One commit: INPUT_REQUIRED with the question, the pending record,
    /// the open gate, and its announcement when the bridge hands over a row.
    async fn open_approval(&self, id: &str, req: &ApprovalRequest, hash: &str) -> Result<(), Error> {
        let opened_ms = now_ms();
        let pending = PendingApproval {
            tool: req.tool.clone(),
            server: req.server.clone(),
            args_hash: hash.to_owned(),
            opened_ms,
            deadline_ms: opened_ms.saturating_add(req.timeout.as_millis() as i64),
            idempotent: req.idempotent,
            interrupted: req.interrupted,
            decision: None,
        };
        let gate = OpenGate {
            ask_schema: Some(approval::ask_schema()),
            ask_channel: req.channel.clone(),
            step: None,
            answerers: req.answerers.clone(),
        };
        let announcement = req.channel.as_ref().map(|channel| GateAnnouncement {
            task_id: id.to_owned(),
            run_id: None,
            question: approval::question(req),
            ask_schema: Some(approval::ask_schema()),
            channel: channel.clone(),
            escalation: false,
            answer_hint: format!("agentd answer {id} '{{\"approve\": true}}'"),
        });
        let bridge = self.installed().bridge.clone();
        let mut batch = Batch::default();
        let mut after = None;
        if let (Some(bridge), Some(a)) = (&bridge, announcement) {
            match bridge.delivery(&a).await {
                Some(Ok(row)) => batch.bridge_deliveries.push(row),
                Some(Err(e)) => tracing::warn!(task = id, error = %e, "the approval could not be announced"),
                None => after = Some(a),
            }
        }
        let question = approval::status_message(req);
        self.mutate_with(id, batch, |rec, now| {
            rec.meta.approval = Some(pending.clone());
            rec.meta.gate = Some(gate.clone());
            let change = Change::Status { state: TaskState::InputRequired, message: Some(question.clone()) };
            transition::apply(rec, change, now).map_err(|r| refused(id, r))
        })
        .await?;
        if let (Some(bridge), Some(a)) = (bridge, after)
            && let Err(e) = bridge.announce(a).await
        {
            tracing::warn!(task = id, error = %e, "the approval could not be announced");
        }
        Ok(())
    }

    /// Nobody answered in time: recorded as a denial (unless an answer
    /// came first), the gate closed, the task WORKING again.
    async fn deny_at_deadline(&self, id: &str, hash: &str) -> Result<(), Error> {
        self.mutate(id, |rec, now| {
            let Some(p) = rec.meta.approval.as_mut().filter(|p| p.args_hash == hash && p.decision.is_none())
            else {
                return Ok(Vec::new());
            };
            p.decision = Some(Decision { approve: false, note: None, by: String::new() });
            let why = format!("nobody approved the call of {} in time; it was denied", p.tool);
            rec.meta.gate = None;
            let change =
                Change::Status { state: TaskState::Working, message: Some(Message::agent_text(why)) };
            transition::apply(rec, change, now).map_err(|r| refused(id, r))
        })
        .await
        .map(|_| ())
    }

    /// Removes the decided record (one commit) and says how it ended.
    async fn take_decision(
        &self,
        id: &str,
        pending: &PendingApproval,
        d: Decision,
    ) -> Result<ApprovalOutcome, Error> {
        self.mutate(id, |rec, _| {
            if rec.meta.approval.as_ref() == Some(pending) {
                rec.meta.approval = None;
            }
            Ok(Vec::new())
        })
        .await?;
        let waited = Duration::from_millis((pending.deadline_ms - pending.opened_ms).max(0) as u64);
        Ok(match d {
            Decision { approve: true, note, by } => ApprovalOutcome::Approved { by, note },
            Decision { approve: false, by, .. } if by.is_empty() => ApprovalOutcome::TimedOut { waited },
            Decision { note, by, .. } => ApprovalOutcome::Denied { by, note },
        })
    }
}
