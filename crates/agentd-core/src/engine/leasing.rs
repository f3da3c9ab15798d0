//! Which replica runs a task, when several share a database
//! (`docs/scaling.md`). A run claims its task's lease before it does
//! anything and releases it when it ends (within a few milliseconds, with
//! the others that ended then, when its task ended); while it runs, every
//! commit of the task carries the lease as a [`Fence`], so a replica that
//! lost the lease (it stalled past the expiry and another adopted the
//! work) has its late writes refused by the store. A renewal loop extends the held
//! leases every ttl/3; a lease that could not be renewed in time is given
//! up locally before it can have expired in the database (self-fencing on
//! a monotonic deadline): its run is stopped and makes no model call. An
//! adoption loop takes over the running tasks whose lease expired (a dead
//! replica's) and resumes them as a restart would. What other replicas
//! change in a task live here is followed in `follow.rs`.
//!
//! On a store without leases (SQLite, memory: one process) this replica
//! holds everything: no claim, no fence, no loop.

use super::{Engine, Runtime};
use crate::error::Error;
use crate::lease::{Fence, Leases, task_resource};
use agentd_proto::{Message, TaskState};
use dashmap::DashMap;
use std::time::{Duration, Instant};

/// The tasks whose lease expired are looked for at most this many at a time.
const ADOPT_BATCH: usize = 64;

/// What a replica is called and how long its leases last.
#[derive(Clone, Debug)]
pub struct ReplicaConfig {
    /// This replica's id in the lease table (unique among live replicas).
    pub id: String,
    /// How long a lease lasts without renewal (by the database clock).
    pub lease_ttl: Duration,
    /// How often expired leases are looked for and their work adopted.
    pub poll_interval: Duration,
}

impl Default for ReplicaConfig {
    fn default() -> Self {
        Self {
            id: "agentd".into(),
            lease_ttl: Duration::from_secs(10),
            poll_interval: Duration::from_secs(10) / 3,
        }
    }
}

impl ReplicaConfig {
    /// How often held leases are renewed.
    fn renew_every(&self) -> Duration {
        self.lease_ttl / 3
    }

    /// A lease is given up locally this long before it could expire: room
    /// for the clocks' drift and for the time a renewal takes to land.
    fn margin(&self) -> Duration {
        self.lease_ttl / 4
    }
}

/// A lease this replica holds.
#[derive(Clone, Copy, Debug)]
pub(super) struct Held {
    epoch: u64,
    /// Past this instant the lease may have expired: the run must not act.
    act_until: Instant,
    /// The run was refused an action on this lease (its deadline had
    /// passed) and stopped, even if a late renewal kept the lease.
    refused: bool,
}

/// The leases this replica holds: task runs by task id, and the outbox's.
#[derive(Default)]
pub(super) struct Leasing {
    pub(super) held: DashMap<String, Held>,
    /// The outbox lease: one replica at a time delivers the outbox rows.
    pub(super) outbox: std::sync::Mutex<Option<Held>>,
    /// Other work held by resource name (a gate's deadlines: `gate:<id>`).
    others: DashMap<String, Held>,
    /// Leases of tasks that ended while this replica ran them, no longer
    /// held, to be given up together (`release_soon`).
    ended: std::sync::Mutex<Vec<(String, u64)>>,
    /// Wakes the loop that gives up `ended`.
    ended_wake: tokio::sync::Notify,
}

/// How long the leases of ended tasks wait to be given up together: at a
/// few thousand turns a second, a statement for dozens of them.
const ENDED_WINDOW: Duration = Duration::from_millis(20);

/// The lease resource of delivering the outbox.
const OUTBOX: &str = "outbox";

impl Leasing {
    pub(super) fn outbox(&self) -> std::sync::MutexGuard<'_, Option<Held>> {
        self.outbox.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes the leases of ended tasks not given up yet.
    fn take_ended(&self) -> Vec<(String, u64)> {
        std::mem::take(&mut *self.ended.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

impl Engine {
    pub(super) fn leases(&self) -> Option<&dyn Leases> {
        self.inner.store.leases()
    }

    fn replica(&self) -> &ReplicaConfig {
        &self.inner.config.replica
    }

    /// The fence a commit of task `id` carries while this replica holds its
    /// lease.
    pub(super) fn fence(&self, id: &str) -> Option<Fence> {
        let held = self.inner.leasing.held.get(id)?;
        Some(Fence { resource: task_resource(id), holder: self.replica().id.clone(), epoch: held.epoch })
    }

    /// Claims the lease of task `id` for a run about to start. True when
    /// this replica holds it now (always, without leases); false when
    /// another replica runs the task.
    pub(super) async fn claim_run(&self, id: &str) -> bool {
        let Some(leases) = self.leases() else { return true };
        if self.inner.leasing.held.contains_key(id) {
            return true;
        }
        let asked = Instant::now();
        let cfg = self.replica();
        match leases.claim(&task_resource(id), &cfg.id, cfg.lease_ttl).await {
            Ok(Some(epoch)) => {
                let act_until = asked + cfg.lease_ttl - cfg.margin();
                self.inner.leasing.held.insert(id.to_owned(), Held { epoch, act_until, refused: false });
                tracing::debug!(task = id, epoch, "lease claimed");
                true
            }
            Ok(None) => {
                tracing::debug!(task = id, "another replica runs this task");
                false
            }
            Err(e) => {
                tracing::warn!(task = id, error = %e, "could not claim the task's lease; not running it here");
                false
            }
        }
    }

    /// Whether this replica holds task `id` (always, without leases).
    pub(super) fn holds(&self, id: &str) -> bool {
        self.leases().is_none() || self.inner.leasing.held.contains_key(id)
    }

    /// Gives up the lease of task `id` (its run ended here).
    pub(super) async fn release_run(&self, id: &str) {
        let Some(leases) = self.leases() else { return };
        let Some((_, held)) = self.inner.leasing.held.remove(id) else { return };
        if let Err(e) = leases.release(&task_resource(id), &self.replica().id, held.epoch).await {
            // It expires on its own; another replica may adopt a task that
            // ended (and finds nothing to do) or waits for input.
            tracing::warn!(task = id, error = %e, "could not release the task's lease");
        }
    }

    /// Gives up the lease of task `id`, whose run here ended with the task,
    /// within `ENDED_WINDOW`: nobody claims an ended task's lease (no run of
    /// it can start again, and adoption takes only running tasks), so it is
    /// no longer held or renewed from now, and one statement gives up every
    /// lease that ended in the window (a statement each cost a transaction
    /// per turn).
    pub(super) fn release_soon(&self, id: &str) {
        if self.leases().is_none() {
            return;
        }
        if let Some((_, held)) = self.inner.leasing.held.remove(id) {
            let mut ended =
                self.inner.leasing.ended.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            ended.push((task_resource(id), held.epoch));
            self.inner.leasing.ended_wake.notify_one();
        }
    }

    /// Gives up the leases of the tasks that ended since the last call.
    async fn release_ended(&self, leases: &dyn Leases) {
        let ended = self.inner.leasing.take_ended();
        if ended.is_empty() {
            return;
        }
        if let Err(e) = leases.release_many(&self.replica().id, &ended).await {
            // They expire on their own; nobody claims them meanwhile.
            tracing::warn!(leases = ended.len(), error = %e, "could not release the leases of ended tasks");
        }
    }

    /// Whether the run of task `id` may still act: its lease cannot have
    /// expired yet. Always true without leases.
    pub(crate) fn may_act(&self, id: &str) -> Result<(), Error> {
        if self.leases().is_none() {
            return Ok(());
        }
        let epoch = match self.inner.leasing.held.get_mut(id) {
            Some(h) if Instant::now() < h.act_until => return Ok(()),
            Some(mut h) => {
                h.refused = true;
                h.epoch
            }
            None => 0,
        };
        Err(Error::Store(crate::store::StoreError::Fenced { resource: task_resource(id), epoch }))
    }

    /// Whether the run of task `id` was refused an action on its lease
    /// ([`Engine::may_act`]): it stopped for that, not for want of a
    /// result, and its task is left to be adopted and resumed.
    pub(super) fn run_was_fenced(&self, id: &str) -> bool {
        self.inner.leasing.held.get(id).is_some_and(|h| h.refused)
    }

    /// Releases every lease held (a graceful stop: another replica picks
    /// the work up at once rather than after the expiry).
    pub(super) async fn release_all(&self) {
        if let Some(leases) = self.leases() {
            self.release_ended(leases).await;
        }
        let ids: Vec<String> = self.inner.leasing.held.iter().map(|e| e.key().clone()).collect();
        for id in ids {
            let (Some(leases), Some((_, held))) = (self.leases(), self.inner.leasing.held.remove(&id)) else {
                continue;
            };
            if let Err(e) = leases.expire(&task_resource(&id), &self.replica().id, held.epoch).await {
                tracing::warn!(task = %id, error = %e, "could not hand the task's lease over");
            }
        }
        let outbox = self.inner.leasing.outbox().take();
        if let (Some(leases), Some(held)) = (self.leases(), outbox) {
            let _ = leases.release(OUTBOX, &self.replica().id, held.epoch).await;
        }
        let others: Vec<(String, Held)> =
            self.inner.leasing.others.iter().map(|e| (e.key().clone(), *e.value())).collect();
        self.inner.leasing.others.clear();
        for (resource, held) in others {
            if let Some(leases) = self.leases() {
                let _ = leases.expire(&resource, &self.replica().id, held.epoch).await;
            }
        }
    }

    /// Whether this replica delivers the outbox now: it holds the outbox
    /// lease (claimed here when free) and may still act on it. The fence
    /// its delivery records carry, if any. Always, without leases.
    pub(super) async fn outbox_turn(&self) -> Option<Option<Fence>> {
        let Some(leases) = self.leases() else { return Some(None) };
        let cfg = self.replica();
        let held = *self.inner.leasing.outbox();
        let held = match held {
            Some(h) => h,
            None => {
                let asked = Instant::now();
                let epoch = match leases.claim(OUTBOX, &cfg.id, cfg.lease_ttl).await {
                    Ok(Some(epoch)) => epoch,
                    Ok(None) => return None,
                    Err(e) => {
                        tracing::warn!(error = %e, "could not claim the outbox lease");
                        return None;
                    }
                };
                tracing::debug!(epoch, "outbox lease claimed: this replica delivers");
                let h = Held { epoch, act_until: asked + cfg.lease_ttl - cfg.margin(), refused: false };
                *self.inner.leasing.outbox() = Some(h);
                h
            }
        };
        if Instant::now() >= held.act_until {
            return None;
        }
        Some(Some(Fence { resource: OUTBOX.into(), holder: cfg.id.clone(), epoch: held.epoch }))
    }

    /// Stops the run of a task whose lease this replica lost.
    async fn lost(&self, id: &str, why: &str) {
        self.inner.leasing.held.remove(id);
        tracing::warn!(task = id, why, "lease lost; the run stops here");
        if let Some(slot) = self.inner.slots.get(id) {
            slot.state.lock().await.cancel.cancel();
        }
    }

    /// Renews every held lease once; gives up those lost or past their
    /// local deadline.
    async fn renew_once(&self, leases: &dyn Leases) {
        let cfg = self.replica();
        let mut held: Vec<(String, u64)> =
            self.inner.leasing.held.iter().map(|e| (task_resource(e.key()), e.value().epoch)).collect();
        let outbox = *self.inner.leasing.outbox();
        held.extend(outbox.map(|h| (OUTBOX.to_owned(), h.epoch)));
        let others: Vec<(String, u64)> =
            self.inner.leasing.others.iter().map(|e| (e.key().clone(), e.value().epoch)).collect();
        held.extend(others.iter().cloned());
        let asked = Instant::now();
        // Bounded: an unreachable database must not hold the loop past a
        // local deadline (a pool waiting for a connection would).
        let bound = self
            .earliest_deadline()
            .map_or(cfg.renew_every(), |d| d.saturating_duration_since(asked).min(cfg.renew_every()))
            .max(Duration::from_millis(50));
        let renewed = match tokio::time::timeout(bound, leases.renew(&cfg.id, &held, cfg.lease_ttl)).await {
            Ok(r) => r,
            Err(_) => Err(crate::store::StoreError::backend(format!("the renewal took over {bound:?}"))),
        };
        if let Some(h) = outbox {
            let mut slot = self.inner.leasing.outbox();
            match &renewed {
                Ok(kept) if kept.iter().any(|r| r == OUTBOX) => {
                    if let Some(now) = slot.as_mut().filter(|now| now.epoch == h.epoch) {
                        now.act_until = asked + cfg.lease_ttl - cfg.margin();
                    }
                }
                Ok(_) => *slot = None,
                Err(_) if Instant::now() >= h.act_until => *slot = None,
                Err(_) => {}
            }
        }
        if let Ok(kept) = &renewed {
            for (resource, epoch) in &others {
                let Some(mut h) = self.inner.leasing.others.get_mut(resource) else { continue };
                if h.epoch != *epoch {
                    continue;
                }
                if kept.contains(resource) {
                    h.act_until = asked + cfg.lease_ttl - cfg.margin();
                } else {
                    drop(h);
                    self.inner.leasing.others.remove(resource);
                }
            }
        }
        match renewed {
            Ok(kept) => {
                for (resource, epoch) in held {
                    let Some(id) = resource.strip_prefix("task:") else { continue };
                    let id = id.to_owned();
                    if kept.contains(&resource) {
                        if let Some(mut h) = self.inner.leasing.held.get_mut(&id)
                            && h.epoch == epoch
                        {
                            h.act_until = asked + cfg.lease_ttl - cfg.margin();
                        }
                    } else if self.inner.leasing.held.get(&id).is_some_and(|h| h.epoch == epoch) {
                        self.lost(&id, "another replica claimed it").await;
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not renew the leases"),
        }
    }

    /// Gives up, here, every lease whose local deadline passed (it was not
    /// renewed in time): its run stops before the lease can expire.
    async fn drop_lapsed(&self) {
        let now = Instant::now();
        let lapsed: Vec<String> = self
            .inner
            .leasing
            .held
            .iter()
            .filter(|e| e.value().act_until <= now)
            .map(|e| e.key().clone())
            .collect();
        for id in lapsed {
            self.lost(&id, "not renewed in time").await;
        }
        let mut outbox = self.inner.leasing.outbox();
        if outbox.is_some_and(|h| h.act_until <= now) {
            *outbox = None;
        }
        drop(outbox);
        self.inner.leasing.others.retain(|_, h| h.act_until > now);
    }

    /// The earliest local deadline of a held lease.
    fn earliest_deadline(&self) -> Option<Instant> {
        let tasks = self.inner.leasing.held.iter().map(|e| e.value().act_until).min();
        let outbox = self.inner.leasing.outbox().map(|h| h.act_until);
        let others = self.inner.leasing.others.iter().map(|e| e.value().act_until).min();
        tasks.into_iter().chain(outbox).chain(others).min()
    }

    /// Adopts the running tasks nobody holds: claims each and resumes it
    /// (or fails it when it cannot resume). Returns how many were failed.
    pub(super) async fn adopt_unheld(&self, leases: &dyn Leases) -> Result<usize, Error> {
        let cfg = self.replica();
        // A task without a lease row younger than a ttl may be claimed by its
        // creator any moment.
        let before_ms = agentd_proto::Timestamp::now().millis() - cfg.lease_ttl.as_millis() as i64;
        let ids =
            leases.unheld_tasks(&[TaskState::Submitted, TaskState::Working], before_ms, ADOPT_BATCH).await?;
        let mut failed = 0;
        for id in ids {
            // A run of this replica is starting on it (it claims next).
            let running_here = match self.inner.slots.get(&id) {
                Some(slot) => slot.state.lock().await.running,
                None => false,
            };
            if running_here || self.is_stopping() || !self.claim_run(&id).await {
                continue;
            }
            // Read after the claim: the last holder's commits are all in.
            let Some(rec) = self.inner.store.get_task(&id).await? else {
                self.release_run(&id).await;
                continue;
            };
            if rec.state().is_terminal() || rec.state().is_interrupted() {
                self.release_run(&id).await;
                continue;
            }
            tracing::info!(task = %id, "adopting a task whose lease expired");
            // A slot this replica kept (a stream) holds an older record.
            if let Some(slot) = self.inner.slots.get(&id) {
                let mut st = slot.state.lock().await;
                if !st.running && !st.detached {
                    st.record = rec.clone();
                }
            }
            if self.resumable(&rec) {
                self.resume(&id).await?;
            } else {
                let why = "the replica running this task stopped; its work could not be resumed";
                let change = crate::transition::Change::Status {
                    state: TaskState::Failed,
                    message: Some(Message::agent_text(why)),
                };
                self.apply_change(&id, change).await?;
                self.release_run(&id).await;
                failed += 1;
            }
        }
        Ok(failed)
    }

    /// Starts the renewal and adoption loops when the store has leases.
    pub(super) fn spawn_lease_loops(&self) {
        if self.leases().is_none() {
            return;
        }
        let (renew_every, poll) = (self.replica().renew_every(), self.replica().poll_interval);
        let engine = self.clone();
        self.inner.background.spawn_until_shutdown(async move {
            // Wakes to renew, and at the earliest local deadline: a lease
            // that could not be renewed is given up on time, not at the
            // next renewal.
            let mut next_renewal = Instant::now();
            loop {
                let wake = engine.earliest_deadline().map_or(next_renewal, |d| d.min(next_renewal));
                tokio::time::sleep_until(wake.into()).await;
                engine.drop_lapsed().await;
                if Instant::now() >= next_renewal {
                    if let Some(leases) = engine.leases() {
                        engine.renew_once(leases).await;
                    }
                    next_renewal = Instant::now() + renew_every;
                }
            }
        });
        // The leases of ended tasks are given up by a loop of their own: a
        // slow database there must not hold a renewal past a deadline.
        let engine = self.clone();
        self.inner.background.spawn_until_shutdown(async move {
            loop {
                engine.inner.leasing.ended_wake.notified().await;
                // The others that end meanwhile go in the same statement.
                tokio::time::sleep(ENDED_WINDOW).await;
                if let Some(leases) = engine.leases() {
                    engine.release_ended(leases).await;
                }
            }
        });
        self.spawn_follower();
        let engine = self.clone();
        self.inner.background.spawn_until_shutdown(async move {
            let mut tick = tokio::time::interval(poll);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if engine.is_stopping() {
                    continue;
                }
                if let Some(leases) = engine.leases()
                    && let Err(e) = engine.adopt_unheld(leases).await
                {
                    tracing::warn!(error = %e, "could not adopt the work of expired leases");
                }
            }
        });
    }
}

impl Runtime {
    /// On a store several replicas share: starts renewing this replica's
    /// leases and adopting the work of expired ones (a dead replica's).
    /// Nothing on a store one process uses.
    pub fn spawn_lease_loops(&self) {
        self.engine().spawn_lease_loops();
    }

    /// This replica's view for operators: the replicas seen lately and the
    /// leases held, or `None` on a store one process uses.
    pub async fn replicas(
        &self,
    ) -> Result<Option<(Vec<crate::lease::ReplicaRow>, Vec<crate::lease::LeaseRow>)>, Error> {
        let Some(leases) = self.engine().leases() else { return Ok(None) };
        let ttl = self.engine().replica().lease_ttl;
        Ok(Some((leases.replicas(ttl * 3).await?, leases.list_leases().await?)))
    }

    /// Whether the store answers (readiness); always on a local store.
    pub async fn store_reachable(&self) -> Result<(), Error> {
        match self.engine().leases() {
            Some(leases) => Ok(leases.ping().await?),
            None => Ok(()),
        }
    }

    /// Whether the store is shared by replicas (has leases): `Some(id)` of
    /// this replica then.
    pub fn replicas_shared(&self) -> Option<&str> {
        self.engine().leases().map(|_| self.replica_id())
    }

    /// Holds the lease of some work other than a task's run (a gate's
    /// deadlines, `gate:<task id>`), claiming it when free: true when this
    /// replica holds it now (always, on a store one process uses). It is
    /// renewed with the others until [`Runtime::let_go`].
    pub async fn hold(&self, resource: &str) -> bool {
        let engine = self.engine();
        let Some(leases) = engine.leases() else { return true };
        if self.holds(resource) {
            return true;
        }
        let cfg = engine.replica();
        let asked = Instant::now();
        match leases.claim(resource, &cfg.id, cfg.lease_ttl).await {
            Ok(Some(epoch)) => {
                let held = Held { epoch, act_until: asked + cfg.lease_ttl - cfg.margin(), refused: false };
                engine.inner.leasing.others.insert(resource.to_owned(), held);
                true
            }
            Ok(None) => false,
            Err(e) => {
                tracing::warn!(lease = resource, error = %e, "could not claim a lease");
                false
            }
        }
    }

    /// Whether this replica holds `resource` and may still act on it.
    pub fn holds(&self, resource: &str) -> bool {
        let engine = self.engine();
        if engine.leases().is_none() {
            return true;
        }
        engine.inner.leasing.others.get(resource).is_some_and(|h| Instant::now() < h.act_until)
    }

    /// Releases what [`Runtime::hold`] claimed (the work is over).
    pub async fn let_go(&self, resource: &str) {
        let engine = self.engine();
        let (Some(leases), Some((_, held))) = (engine.leases(), engine.inner.leasing.others.remove(resource))
        else {
            return;
        };
        if let Err(e) = leases.release(resource, &engine.replica().id, held.epoch).await {
            tracing::warn!(lease = resource, error = %e, "could not release a lease");
        }
    }

    /// This replica's id.
    pub fn replica_id(&self) -> &str {
        &self.engine().replica().id
    }
}
