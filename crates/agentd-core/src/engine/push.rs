//! The four push-notification config operations. A config is visible to
//! the principal that registered it and to operators: one principal never
//! reads another's webhook credentials, even on a task both may see.

use super::Engine;
use crate::error::{Error, FieldPath, Violations};
use crate::principal::Principal;
use crate::store::{Batch, PushConfigRow};
use agentd_proto::{
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse, TaskPushConfigRef,
    TaskPushNotificationConfig, new_id,
};

impl Engine {
    fn push_enabled(&self) -> Result<(), Error> {
        if self.inner.config.push_enabled {
            Ok(())
        } else {
            Err(Error::PushNotSupported(Some("push notifications are turned off on this agent".into())))
        }
    }

    #[tracing::instrument(name = "create_push_config", level = "debug", skip_all, fields(task_id = %cfg.task_id))]
    pub async fn create_push_config(
        &self,
        p: &Principal,
        mut cfg: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, Error> {
        self.push_enabled()?;
        if cfg.task_id.is_empty() {
            return Err(Error::invalid(FieldPath::of("taskId"), "is required"));
        }
        check_authentication(&cfg, FieldPath::of("authentication.scheme"))?;
        check_sizes(&cfg, "")?;
        self.owned_record(p, &cfg.task_id, "watch").await?;
        self.check_push_url(FieldPath::of("url"), &cfg.url).await?;
        if cfg.id.is_empty() {
            cfg.id = new_id();
        }
        // The id check and the write are one step: under the lock on the
        // task's config writes, and under the task's lock while it is live
        // (the lock an inline config is checked and committed under), so
        // two principals writing one id cannot both pass the check.
        let _writes = self.inner.push_config_writes.of(&cfg.task_id).lock().await;
        let live = self.slot(&cfg.task_id).await?;
        let _task = match &live {
            Some(slot) => Some(slot.state.lock().await),
            None => None,
        };
        self.check_config_id(p, &cfg.task_id, &cfg.id, FieldPath::of("id")).await?;
        self.check_config_room(&cfg.task_id, &cfg.id).await?;
        cfg.tenant.clear();
        let batch = Batch {
            push_upserts: vec![PushConfigRow { owner: p.id.clone(), config: cfg.clone() }],
            ..Batch::default()
        };
        self.inner.store.commit(batch).await?;
        Ok(cfg)
    }

    /// Refuses a config id of task `task_id` that belongs to a config the
    /// principal may not see: an upsert would replace another principal's
    /// webhook (and credentials). `field` names the id in the request.
    pub(super) async fn check_config_id(
        &self,
        p: &Principal,
        task_id: &str,
        id: &str,
        field: FieldPath,
    ) -> Result<(), Error> {
        if id.is_empty() {
            return Ok(());
        }
        match self.inner.store.get_push_config(task_id, id).await? {
            Some(existing) if !p.can_see(&existing.owner) => {
                Err(Error::invalid(field, "is already used by another principal's config"))
            }
            _ => Ok(()),
        }
    }

    #[tracing::instrument(name = "get_push_config", level = "debug", skip_all, fields(task_id = %req.task_id))]
    pub async fn get_push_config(
        &self,
        p: &Principal,
        req: TaskPushConfigRef,
    ) -> Result<TaskPushNotificationConfig, Error> {
        self.push_enabled()?;
        require_ref(&req)?;
        self.visible_record(p, &req.task_id).await?;
        match self.inner.store.get_push_config(&req.task_id, &req.id).await? {
            Some(row) if p.can_see(&row.owner) => Ok(row.config),
            _ => {
                Err(Error::not_found(format!("push config {:?} of task {:?} not found", req.id, req.task_id))
                    .with_meta("taskId", &req.task_id)
                    .with_meta("configId", &req.id))
            }
        }
    }

    #[tracing::instrument(name = "list_push_configs", level = "debug", skip_all, fields(task_id = %req.task_id))]
    pub async fn list_push_configs(
        &self,
        p: &Principal,
        req: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, Error> {
        self.push_enabled()?;
        if req.task_id.is_empty() {
            return Err(Error::invalid(FieldPath::of("taskId"), "is required"));
        }
        if req.page_size < 0 {
            return Err(Error::invalid(FieldPath::of("pageSize"), "must not be negative"));
        }
        self.visible_record(p, &req.task_id).await?;
        let rows = self.inner.store.list_push_configs(&req.task_id).await?;
        let mut configs: Vec<_> =
            rows.into_iter().filter(|r| p.can_see(&r.owner)).map(|r| r.config).collect();
        // A page starts after the config the token names (oldest first).
        if !req.page_token.is_empty() {
            let Some(at) = configs.iter().position(|c| c.id == req.page_token) else {
                return Err(Error::invalid(
                    FieldPath::of("pageToken"),
                    "is not a page token of this list (the config it names is gone)",
                ));
            };
            configs.drain(..=at);
        }
        let size = usize::try_from(req.page_size).unwrap_or(0);
        let mut next_page_token = String::new();
        if size > 0 && configs.len() > size {
            configs.truncate(size);
            next_page_token = configs.last().map(|c| c.id.clone()).unwrap_or_default();
        }
        Ok(ListTaskPushNotificationConfigsResponse { configs, next_page_token })
    }

    /// Refuses a config that would be one too many on its task: a new id
    /// when the task has [`MAX_CONFIGS_PER_TASK`] already (a config that
    /// replaces one of them is not one more).
    pub(super) async fn check_config_room(&self, task_id: &str, id: &str) -> Result<(), Error> {
        let rows = self.inner.store.list_push_configs(task_id).await?;
        if rows.len() >= MAX_CONFIGS_PER_TASK && !rows.iter().any(|r| r.config.id == id) {
            return Err(Error::unsupported(format!(
                "task {task_id:?} has {MAX_CONFIGS_PER_TASK} push configs, the most a task may have; \
                 delete one first"
            )));
        }
        Ok(())
    }

    /// Idempotent: deleting a config that is not there succeeds.
    #[tracing::instrument(name = "delete_push_config", level = "debug", skip_all, fields(task_id = %req.task_id))]
    pub async fn delete_push_config(&self, p: &Principal, req: TaskPushConfigRef) -> Result<(), Error> {
        self.push_enabled()?;
        require_ref(&req)?;
        self.visible_record(p, &req.task_id).await?;
        let Some(row) = self.inner.store.get_push_config(&req.task_id, &req.id).await? else {
            return Ok(());
        };
        if !p.can_see(&row.owner) {
            return Ok(());
        }
        let batch = Batch { push_deletes: vec![(req.task_id, req.id)], ..Batch::default() };
        Ok(self.inner.store.commit(batch).await?)
    }
}

fn require_ref(r: &TaskPushConfigRef) -> Result<(), Error> {
    let mut v = Violations::default();
    for (field, value) in [("taskId", &r.task_id), ("id", &r.id)] {
        if value.is_empty() {
            v.add(FieldPath::of(field), "is required");
        }
    }
    v.finish()
}

/// A config's `authentication`, when given, names its scheme (`at`: where
/// the scheme is in the request), created alone or inline in a SendMessage.
pub(super) fn check_authentication(cfg: &TaskPushNotificationConfig, at: FieldPath) -> Result<(), Error> {
    match &cfg.authentication {
        Some(auth) if auth.scheme.trim().is_empty() => Err(Error::invalid(at, "is required")),
        _ => Ok(()),
    }
}

/// The most push configs one task may have.
pub(super) const MAX_CONFIGS_PER_TASK: usize = 16;

/// The longest `url`, `token`, authentication `scheme` and `credentials` of
/// a config, in bytes: what a webhook needs, not what a body may carry.
const MAX_URL_BYTES: usize = 2048;
const MAX_TOKEN_BYTES: usize = 4096;
const MAX_SCHEME_BYTES: usize = 64;
const MAX_CREDENTIALS_BYTES: usize = 8192;

/// Refuses a config field longer than its limit; `prefix` is where the
/// config is in the request (empty, or the inline config's path).
pub(super) fn check_sizes(cfg: &TaskPushNotificationConfig, prefix: &'static str) -> Result<(), Error> {
    let at = |name: &'static str| match prefix {
        "" => FieldPath::of(name),
        _ => name.split('.').fold(FieldPath::of(prefix), FieldPath::field),
    };
    let mut v = Violations::default();
    let mut limit = |name: &'static str, value: &str, max: usize| {
        if value.len() > max {
            v.add(at(name), format!("is {} bytes; the most is {max}", value.len()));
        }
    };
    limit("url", &cfg.url, MAX_URL_BYTES);
    limit("token", &cfg.token, MAX_TOKEN_BYTES);
    if let Some(auth) = &cfg.authentication {
        limit("authentication.scheme", &auth.scheme, MAX_SCHEME_BYTES);
        limit("authentication.credentials", &auth.credentials, MAX_CREDENTIALS_BYTES);
    }
    v.finish()
}

/// The locks CreateTaskPushNotificationConfig takes from its id check to
/// its commit: one per stripe of task ids, so writes to one task wait for
/// each other and writes to most other tasks do not (a lock per task id
/// would need a map that forgets them).
pub(super) struct ConfigWriteLocks([tokio::sync::Mutex<()>; CONFIG_WRITE_STRIPES]);

const CONFIG_WRITE_STRIPES: usize = 64;

impl Default for ConfigWriteLocks {
    fn default() -> Self {
        Self(std::array::from_fn(|_| tokio::sync::Mutex::new(())))
    }
}

impl ConfigWriteLocks {
    /// The lock of `task_id`'s stripe.
    pub(super) fn of(&self, task_id: &str) -> &tokio::sync::Mutex<()> {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(task_id);
        &self.0[(hash % CONFIG_WRITE_STRIPES as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::ConfigWriteLocks;

    #[test]
    fn one_task_has_one_lock_and_tasks_spread_over_the_stripes() {
        let locks = ConfigWriteLocks::default();
        assert!(std::ptr::eq(locks.of("t-1"), locks.of("t-1")));
        let used: std::collections::HashSet<*const _> =
            (0..1_000).map(|i| locks.of(&format!("task-{i}")) as *const _).collect();
        assert!(used.len() > 32, "a thousand tasks fall in {} stripes", used.len());
    }

    #[tokio::test]
    async fn a_write_to_one_task_does_not_wait_for_another_tasks() {
        let locks = ConfigWriteLocks::default();
        let other =
            (0..).map(|i| format!("task-{i}")).find(|id| !std::ptr::eq(locks.of(id), locks.of("t-1")));
        let other = other.expect("another stripe");
        let _held = locks.of("t-1").lock().await;
        assert!(locks.of(&other).try_lock().is_ok(), "another task's writes go on");
        assert!(locks.of("t-1").try_lock().is_err(), "the same task's wait");
    }
}
