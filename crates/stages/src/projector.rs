//! The projector: all events -> Postgres read models.
//!
//! Each message is applied in one transaction that also advances the
//! group's offset for its partition (compare-and-set), so a crash at any
//! point leaves either nothing or everything of that message, and a
//! re-delivery is recognised and skipped.

use rag_bus::{Inbound, Outcome, ProcessError, Processor, StartAt};
use rag_events::{AnyEvent, Codec, EventType, Topics};
use rag_store::offsets::{self, Claim};
use rag_store::{documents, sqlx::PgPool, StoreError};
use tracing::{debug, info};

use crate::failpoint::Failpoint;

pub const STAGE: &str = "projector";
pub const GROUP: &str = "rag-projector";

/// Events the projector consumes (today: what has a read model).
pub const CONSUMES: &[EventType] = &[EventType::DocumentUploaded, EventType::DocumentDeleted];

pub struct Projector {
    pool: PgPool,
    codec: Codec,
    topics: Topics,
    group: String,
    failpoint: Option<Failpoint>,
}

impl Projector {
    /// `group` is the full consumer group name (deployment prefix included):
    /// offsets are stored under it.
    pub fn new(pool: PgPool, codec: Codec, topics: Topics, group: String) -> Self {
        Projector { pool, codec, topics, group, failpoint: Failpoint::from_env() }
    }
}

fn store_err(e: StoreError) -> ProcessError {
    if e.is_transient() {
        ProcessError::Transient(e.to_string())
    } else {
        ProcessError::permanent("invalid_event", e.to_string())
    }
}

impl Processor for Projector {
    async fn process(&self, msg: &Inbound) -> Result<Outcome, ProcessError> {
        let payload = msg.payload.as_deref().unwrap_or_default();
        let event = self
            .codec
            .decode_any(payload)
            .map_err(|e| ProcessError::permanent(e.code(), e.to_string()))?;
        if self.topics.event_of(&msg.topic) != Some(event.event_type()) {
            return Err(ProcessError::permanent(
                "wrong_topic",
                format!("a {} event does not belong on {}", event.event_type(), msg.topic),
            ));
        }
        let mut tx = self.pool.begin().await.map_err(|e| store_err(e.into()))?;
        match offsets::claim(&mut tx, &self.group, &msg.topic, msg.partition, msg.offset).await.map_err(store_err)? {
            Claim::AlreadyApplied { next_offset } => {
                debug!(next_offset, "already projected");
                return Ok(Outcome::Duplicate);
            }
            Claim::Apply => {}
        }
        match &event {
            AnyEvent::DocumentUploaded(e) => {
                documents::apply_uploaded(&mut tx, e).await.map_err(store_err)?;
                info!(workspace_id = %e.envelope.workspace_id, document_id = %e.document_id,
                      event_id = %e.envelope.event_id, filename = %e.filename, "document uploaded");
            }
            AnyEvent::DocumentDeleted(e) => {
                documents::apply_deleted(&mut tx, e).await.map_err(store_err)?;
                info!(workspace_id = %e.envelope.workspace_id, document_id = %e.document_id,
                      event_id = %e.envelope.event_id, "document deleted");
            }
            // Later stages' read models land with their issues; the offset
            // still advances so the partition moves on.
            _ => {}
        }
        Failpoint::hit(&self.failpoint, "projector-before-commit").await;
        tx.commit().await.map_err(|e| store_err(e.into()))?;
        Failpoint::hit(&self.failpoint, "projector-after-commit").await;
        Ok(Outcome::Applied)
    }

    async fn dead_lettered(&self, msg: &Inbound, code: &str, reason: &str) -> Result<(), ProcessError> {
        let mut tx = self.pool.begin().await.map_err(|e| store_err(e.into()))?;
        if let Claim::Apply =
            offsets::claim(&mut tx, &self.group, &msg.topic, msg.partition, msg.offset).await.map_err(store_err)?
        {
            // Document topics are keyed by document id: mark it failed so the
            // user sees why it stopped (unknown ids are ignored).
            let is_document_topic = matches!(
                self.topics.event_of(&msg.topic),
                Some(
                    EventType::DocumentUploaded
                        | EventType::DocumentParsed
                        | EventType::DocumentChunked
                        | EventType::DocumentIngested
                )
            );
            if let (true, Some(key)) = (is_document_topic, msg.key_str()) {
                documents::mark_failed(&mut tx, key, code, reason).await.map_err(store_err)?;
            }
        }
        tx.commit().await.map_err(|e| store_err(e.into()))?;
        Ok(())
    }

    async fn start_at(&self, topic: &str, partition: i32) -> Result<StartAt, ProcessError> {
        Ok(match offsets::load(&self.pool, &self.group, topic, partition).await.map_err(store_err)? {
            Some(n) => StartAt::Offset(n),
            None => StartAt::Beginning,
        })
    }
}
