//! Leases on PostgreSQL (`agentd_core::lease`): every expiry is computed
//! by the database's clock (`now()`), never a replica's, so replicas whose
//! clocks disagree still agree on who holds what. A holder's batch checks
//! its fences in the batch's transaction (`write::CHECK_FENCE`), locking the
//! lease rows it reads `FOR KEY SHARE`: a claim of an existing row locks
//! it `FOR UPDATE` first, which that lock excludes, so no claim slips in
//! between the check and the COMMIT; renewals and releases (updates of
//! non-key columns) do not conflict with it. (`FOR SHARE` did: a renewal
//! of many rows and a group checking many fences deadlocked, and each
//! such deadlock cost PostgreSQL's one-second deadlock timeout.)

use super::{PostgresStore, db, read};
use agentd_core::{LeaseRow, Leases, ReplicaRow, StoreError};
use agentd_proto::TaskState;
use async_trait::async_trait;
use std::time::Duration;

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[async_trait]
impl Leases for PostgresStore {
    async fn claim(&self, resource: &str, holder: &str, ttl: Duration) -> Result<Option<u64>, StoreError> {
        let mut client = self.client().await?;
        // A resource never leased (a new task's run, the common case) is
        // one statement; a row that exists goes the locking way below.
        let s = client
            .prepare_cached(
                "INSERT INTO leases (resource, holder, epoch, expires_at)
                 VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
                 ON CONFLICT (resource) DO NOTHING RETURNING epoch",
            )
            .await
            .map_err(db("prepare claim"))?;
        if let Some(row) =
            client.query_opt(&s, &[&resource, &holder, &millis(ttl)]).await.map_err(db("claim new lease"))?
        {
            return Ok(u64::try_from(row.get::<_, i64>(0)).ok());
        }
        let tx = client.transaction().await.map_err(db("begin claim"))?;
        // A row another claimer (or a holder's commit) has locked is skipped:
        // it is taken, or about to be.
        let row = tx
            .query_opt(
                "SELECT expires_at < now() FROM leases WHERE resource = $1 FOR UPDATE SKIP LOCKED",
                &[&resource],
            )
            .await
            .map_err(db("read lease"))?;
        let epoch = match row {
            Some(row) if row.get::<_, bool>(0) => tx
                .query_opt(
                    "UPDATE leases SET holder = $2, epoch = epoch + 1,
                        expires_at = now() + $3 * interval '1 millisecond'
                     WHERE resource = $1 RETURNING epoch",
                    &[&resource, &holder, &millis(ttl)],
                )
                .await
                .map_err(db("claim lease"))?,
            Some(_) => None,
            // No row, or one locked by someone else: an insert settles which.
            None => tx
                .query_opt(
                    "INSERT INTO leases (resource, holder, epoch, expires_at)
                     VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
                     ON CONFLICT (resource) DO NOTHING RETURNING epoch",
                    &[&resource, &holder, &millis(ttl)],
                )
                .await
                .map_err(db("claim new lease"))?,
        };
        tx.commit().await.map_err(db("commit claim"))?;
        Ok(epoch.and_then(|r| u64::try_from(r.get::<_, i64>(0)).ok()))
    }

    async fn renew(
        &self,
        holder: &str,
        held: &[(String, u64)],
        ttl: Duration,
    ) -> Result<Vec<String>, StoreError> {
        let client = self.client().await?;
        let ms = millis(ttl);
        let seen_args: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&holder];
        let seen = client.execute(
            "INSERT INTO replicas (id, seen_at) VALUES ($1, now())
             ON CONFLICT (id) DO UPDATE SET seen_at = now()",
            &seen_args,
        );
        let resources: Vec<&str> = held.iter().map(|(r, _)| r.as_str()).collect();
        let epochs: Vec<i64> = held.iter().map(|(_, e)| i64::try_from(*e).unwrap_or(i64::MAX)).collect();
        let renew_args: [&(dyn tokio_postgres::types::ToSql + Sync); 4] = [&holder, &resources, &epochs, &ms];
        let renewed = client.query(
            "UPDATE leases l SET expires_at = now() + $4 * interval '1 millisecond'
             FROM UNNEST($2::TEXT[], $3::BIGINT[]) AS h (resource, epoch)
             WHERE l.resource = h.resource AND l.epoch = h.epoch AND l.holder = $1
             RETURNING l.resource",
            &renew_args,
        );
        // Both on one connection, pipelined.
        let (seen, renewed) = tokio::join!(seen, renewed);
        seen.map_err(db("record replica"))?;
        Ok(renewed.map_err(db("renew leases"))?.iter().map(|r| r.get::<_, String>(0)).collect())
    }

    async fn release(&self, resource: &str, holder: &str, epoch: u64) -> Result<(), StoreError> {
        let epoch = i64::try_from(epoch).unwrap_or(i64::MAX);
        let client = self.client().await?;
        // Prepared once per connection: every run ends with a release.
        let s = client
            .prepare_cached(
                "UPDATE leases SET holder = '', expires_at = '-infinity'
                 WHERE resource = $1 AND holder = $2 AND epoch = $3",
            )
            .await
            .map_err(db("prepare release"))?;
        client.execute(&s, &[&resource, &holder, &epoch]).await.map_err(db("release lease"))?;
        Ok(())
    }

    async fn release_many(&self, holder: &str, held: &[(String, u64)]) -> Result<(), StoreError> {
        if held.is_empty() {
            return Ok(());
        }
        let resources: Vec<&str> = held.iter().map(|(r, _)| r.as_str()).collect();
        let epochs: Vec<i64> = held.iter().map(|(_, e)| i64::try_from(*e).unwrap_or(i64::MAX)).collect();
        self.client()
            .await?
            .execute(
                "UPDATE leases l SET holder = '', expires_at = '-infinity'
                 FROM UNNEST($2::TEXT[], $3::BIGINT[]) AS h (resource, epoch)
                 WHERE l.resource = h.resource AND l.epoch = h.epoch AND l.holder = $1",
                &[&holder, &resources, &epochs],
            )
            .await
            .map_err(db("release leases"))?;
        Ok(())
    }

    async fn expire(&self, resource: &str, holder: &str, epoch: u64) -> Result<(), StoreError> {
        let epoch = i64::try_from(epoch).unwrap_or(i64::MAX);
        self.client()
            .await?
            .execute(
                "UPDATE leases SET expires_at = now() - interval '1 millisecond'
                 WHERE resource = $1 AND holder = $2 AND epoch = $3",
                &[&resource, &holder, &epoch],
            )
            .await
            .map_err(db("expire lease"))?;
        Ok(())
    }

    async fn unheld_tasks(
        &self,
        states: &[TaskState],
        unleased_before_ms: i64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let states: Vec<i32> = states.iter().map(|s| read::state_param(*s)).collect();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .client()
            .await?
            .query(
                "SELECT t.id FROM tasks t LEFT JOIN leases l ON l.resource = 'task:' || t.id
                 WHERE t.state = ANY($1)
                   AND (((l.resource IS NULL OR l.holder = '') AND t.updated_ms < $2)
                        OR (l.holder <> '' AND l.expires_at < now()))
                 ORDER BY t.updated_ms, t.id LIMIT $3",
                &[&states, &unleased_before_ms, &limit],
            )
            .await
            .map_err(db("find unheld tasks"))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    async fn list_leases(&self) -> Result<Vec<LeaseRow>, StoreError> {
        let rows = self
            .client()
            .await?
            .query(
                "SELECT resource, holder, epoch,
                    (EXTRACT(EPOCH FROM (expires_at - now())) * 1000)::BIGINT
                 FROM leases WHERE expires_at > now() ORDER BY resource",
                &[],
            )
            .await
            .map_err(db("list leases"))?;
        Ok(rows
            .iter()
            .map(|r| LeaseRow {
                resource: r.get(0),
                holder: r.get(1),
                epoch: u64::try_from(r.get::<_, i64>(2)).unwrap_or(0),
                expires_in_ms: r.get(3),
            })
            .collect())
    }

    async fn replicas(&self, within: Duration) -> Result<Vec<ReplicaRow>, StoreError> {
        let rows = self
            .client()
            .await?
            .query(
                "SELECT id, (EXTRACT(EPOCH FROM (now() - seen_at)) * 1000)::BIGINT FROM replicas
                 WHERE seen_at > now() - $1 * interval '1 millisecond' ORDER BY id",
                &[&millis(within)],
            )
            .await
            .map_err(db("list replicas"))?;
        Ok(rows.iter().map(|r| ReplicaRow { id: r.get(0), seen_ms_ago: r.get(1) }).collect())
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.client().await?.execute("SELECT 1", &[]).await.map_err(db("ping"))?;
        Ok(())
    }

    fn subscribe_task_writes(&self) -> tokio::sync::broadcast::Receiver<std::sync::Arc<str>> {
        self.task_writes.subscribe()
    }
}
