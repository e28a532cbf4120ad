//! Consumer offsets owned by Postgres.
//!
//! A projection claims an offset inside its transaction: the stored
//! `next_offset` row is locked, compared with the message offset, and
//! advanced together with the rows the message produces. A message that was
//! already applied (re-delivered after a crash between the database commit
//! and the Kafka commit, or seen by a second consumer during a rebalance) is
//! recognised and skipped.

use sqlx::{PgPool, Postgres, Transaction};

use crate::StoreError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// The message is new: apply it, then commit.
    Apply,
    /// The message was already applied; the stored next offset is given.
    AlreadyApplied { next_offset: i64 },
}

/// The next offset to consume for a partition, if this group ever stored one.
pub async fn load(pool: &PgPool, group: &str, topic: &str, partition: i32) -> Result<Option<i64>, StoreError> {
    let row: Option<(i64,)> =
        sqlx::query_as("SELECT next_offset FROM consumer_offsets WHERE consumer_group = $1 AND topic = $2 AND partition = $3")
            .bind(group)
            .bind(topic)
            .bind(partition)
            .fetch_optional(pool)
            .await?;
    Ok(row.map(|r| r.0))
}

/// Locks the partition's offset row and decides whether `offset` is new.
/// On [`Claim::Apply`] the row is already advanced to `offset + 1`: the
/// caller writes its rows in the same transaction and commits.
pub async fn claim(tx: &mut Transaction<'_, Postgres>, group: &str, topic: &str, partition: i32, offset: i64) -> Result<Claim, StoreError> {
    // One round trip for the usual case (a new offset): the upsert creates
    // or locks the row and advances it only if `offset` is not behind it.
    // A conflicting row is locked even when the WHERE refuses the update, so
    // the re-delivery case reads it under the same lock.
    let advanced: Option<(i64,)> = sqlx::query_as(
        "INSERT INTO consumer_offsets (consumer_group, topic, partition, next_offset) VALUES ($1, $2, $3, $4 + 1)
         ON CONFLICT (consumer_group, topic, partition) DO UPDATE SET next_offset = EXCLUDED.next_offset, updated_at = now()
         WHERE consumer_offsets.next_offset <= $4
         RETURNING next_offset",
    )
    .bind(group)
    .bind(topic)
    .bind(partition)
    .bind(offset)
    .fetch_optional(&mut **tx)
    .await?;
    if advanced.is_some() {
        return Ok(Claim::Apply);
    }
    let (next_offset,): (i64,) = sqlx::query_as(
        "SELECT next_offset FROM consumer_offsets
         WHERE consumer_group = $1 AND topic = $2 AND partition = $3 FOR UPDATE",
    )
    .bind(group)
    .bind(topic)
    .bind(partition)
    .fetch_one(&mut **tx)
    .await?;
    Ok(Claim::AlreadyApplied { next_offset })
}

/// Every stored offset of `groups`: (group, topic, partition, next offset).
pub async fn list_groups(pool: &PgPool, groups: &[String]) -> Result<Vec<(String, String, i32, i64)>, StoreError> {
    Ok(sqlx::query_as("SELECT consumer_group, topic, partition, next_offset FROM consumer_offsets WHERE consumer_group = ANY($1)")
        .bind(groups)
        .fetch_all(pool)
        .await?)
}

/// Every stored offset of a group, for operators and tests.
pub async fn list(pool: &PgPool, group: &str) -> Result<Vec<(String, i32, i64)>, StoreError> {
    Ok(sqlx::query_as("SELECT topic, partition, next_offset FROM consumer_offsets WHERE consumer_group = $1 ORDER BY topic, partition")
        .bind(group)
        .fetch_all(pool)
        .await?)
}
