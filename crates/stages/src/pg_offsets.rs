//! Offsets owned by Postgres, for the stages whose effect is a write to
//! Postgres (the projector, the indexer). The partition's next offset is
//! claimed compare-and-set in the effect's own transaction, so a crash
//! leaves either both or neither, and a re-delivered record is recognised
//! ([`Claim::AlreadyApplied`]) instead of applied twice. Kafka's committed
//! offset is then only a hint for standard tools.

use rag_bus::{Inbound, StartAt};
use rag_store::offsets::{self, Claim};
use rag_store::sqlx::{PgPool, Postgres, Transaction};

use crate::error::StageError;

/// One consumer group's offsets in `consumer_offsets`.
#[derive(Debug, Clone)]
pub struct PgOffsets {
    pool: PgPool,
    group: String,
}

impl PgOffsets {
    /// `group` is the full consumer group name (deployment prefix included).
    pub fn new(pool: PgPool, group: String) -> Self {
        PgOffsets { pool, group }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Inside the effect's transaction: whether `msg` is new (apply it,
    /// then commit) or was applied before.
    pub async fn claim(&self, tx: &mut Transaction<'_, Postgres>, msg: &Inbound) -> Result<Claim, StageError> {
        Ok(offsets::claim(tx, &self.group, &msg.topic, msg.partition, msg.offset).await?)
    }

    /// Moves the partition past `msg` without an effect (a dead letter, or
    /// an event of a deleted document).
    pub async fn skip(&self, msg: &Inbound) -> Result<(), StageError> {
        let mut tx = self.pool.begin().await?;
        self.claim(&mut tx, msg).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Where a partition resumes: right after the last applied record.
    pub async fn start_at(&self, topic: &str, partition: i32) -> Result<StartAt, StageError> {
        Ok(match offsets::load(&self.pool, &self.group, topic, partition).await? {
            Some(n) => StartAt::Offset(n),
            None => StartAt::Beginning,
        })
    }

    /// For a stage that produces its output after the effect commits: a
    /// crash in between leaves an applied record whose output is missing,
    /// so it resumes at Kafka's committed offset when that is lower (it
    /// moves only once the output is delivered).
    pub async fn start_at_output_after_commit(&self, topic: &str, partition: i32) -> Result<StartAt, StageError> {
        Ok(match self.start_at(topic, partition).await? {
            StartAt::Offset(n) => StartAt::AppliedBefore(n),
            other => other,
        })
    }
}
