//! The projector: all events -> Postgres read models.
//!
//! Each message is applied in one transaction that also advances the
//! group's offset for its partition (compare-and-set), so a crash at any
//! point leaves either nothing or everything of that message, and a
//! re-delivery is recognised and skipped.

use rag_blobs::BlobStore;
use rag_bus::{FailureCode, Inbound, Outcome, Positions, Stage, StageIdentity, StartAt};
use rag_chunking::Chunk;
use rag_docparse::Segment;
use rag_events::{AnyEvent, Codec, EventType, Topics};
use rag_store::documents::{self, DocumentStatus};
use rag_store::offsets::Claim;
use rag_store::{messages, pipeline, sqlx::PgPool};
use rag_telemetry::events::{FirstIngestion, ProjectorStarted};
use rag_telemetry::InternalEvent;
use tracing::{debug, info};

use crate::common::{derived_prefix, fetch_json};
use crate::error::StageError;
use crate::failpoint::Failpoint;
use crate::pg_offsets::PgOffsets;

pub const STAGE: &str = "projector";
pub const GROUP: &str = "rag-projector";

/// Events the projector consumes (today: what has a read model).
pub const ALL_EVENTS: &[EventType] = &[
    EventType::DocumentUploaded,
    EventType::DocumentParsed,
    EventType::DocumentChunked,
    EventType::DocumentIngested,
    EventType::DocumentDeleted,
    EventType::QuestionAsked,
    EventType::AnswerProduced,
];

pub fn identity() -> StageIdentity {
    StageIdentity {
        name: STAGE,
        group: GROUP.into(),
        consumes: ALL_EVENTS.to_vec(),
        produces: Vec::new(),
        positions: Positions::Postgres,
        // One record at a time: its topics carry several events of one
        // document (parsed, chunked, ingested) that update the same rows.
        // Side by side they deadlocked in Postgres (retried, but meanwhile
        // a document read `ingested` before its segments were projected).
        max_in_flight: Some(1),
    }
}

pub struct Projector {
    pool: PgPool,
    offsets: PgOffsets,
    blobs: BlobStore,
    codec: Codec,
    topics: Topics,
    consumes: Vec<EventType>,
    failpoint: Option<Failpoint>,
}

impl Projector {
    /// `group` is the full consumer group name (deployment prefix included):
    /// offsets are stored under it.
    pub fn new(pool: PgPool, blobs: BlobStore, codec: Codec, topics: Topics, group: String) -> Self {
        let offsets = PgOffsets::new(pool.clone(), group);
        Projector { pool, offsets, blobs, codec, topics, consumes: ALL_EVENTS.to_vec(), failpoint: Failpoint::from_env() }
    }

    /// Only these events (a rebuild projects the log in phases).
    pub fn consuming(mut self, events: &[EventType]) -> Self {
        self.consumes = events.to_vec();
        self
    }
}

impl Projector {
    /// A deleted document's blobs: everything derived from it, and its
    /// original unless another live document of the workspace has the same
    /// bytes. Runs before the rows are purged, and is idempotent, so a
    /// crash in between only repeats it.
    async fn delete_blobs(&self, e: &rag_events::DocumentDeleted) -> Result<(), StageError> {
        let ws = &e.envelope.workspace_id;
        let removed = self.blobs.delete_prefix(&derived_prefix(ws, &e.document_id)).await?;
        let Ok(id) = uuid::Uuid::parse_str(&e.document_id) else { return Ok(()) };
        let original = documents::get(&self.pool, ws, id).await?.and_then(|d| d.blob_uri);
        if let Some(uri) = original {
            if !documents::original_shared(&self.pool, ws, id, &uri).await? {
                if let Ok(key) = self.blobs.key_of(&uri) {
                    self.blobs.delete(key).await?;
                }
            }
        }
        debug!(document_id = %e.document_id, derived = removed, "blobs deleted");
        Ok(())
    }
}

impl Stage for Projector {
    type Error = StageError;

    fn identity(&self) -> StageIdentity {
        StageIdentity { consumes: self.consumes.clone(), ..identity() }
    }

    fn started(&self) {
        ProjectorStarted.emit();
    }

    async fn process(&self, msg: &Inbound) -> Result<Outcome, StageError> {
        let event = self.codec.decode_any(msg.payload.as_deref().unwrap_or_default())?;
        if self.topics.event_of(&msg.topic) != Some(event.event_type()) {
            return Err(StageError::invalid(
                FailureCode::WrongTopic,
                format!("a {} event does not belong on {}", event.event_type(), msg.topic),
            ));
        }
        // A deleted document's later events (and replays of its earlier
        // ones) change nothing: their blobs are gone with it.
        let derived_of = match &event {
            AnyEvent::DocumentParsed(e) => Some(e.document_id.as_str()),
            AnyEvent::DocumentChunked(e) => Some(e.document_id.as_str()),
            _ => None,
        }
        .and_then(|id| uuid::Uuid::parse_str(id).ok());
        if let Some(id) = derived_of {
            if documents::status_of(&self.pool, id).await? == Some(DocumentStatus::Deleted) {
                self.offsets.skip(msg).await?;
                debug!(document_id = %id, "event of a deleted document skipped");
                return Ok(Outcome::Applied);
            }
        }
        if let AnyEvent::DocumentDeleted(e) = &event {
            self.delete_blobs(e).await?;
        }
        // Claim-checked payloads are read before the transaction opens.
        let mut segments: Vec<Segment> = Vec::new();
        let mut chunks: Vec<Chunk> = Vec::new();
        match &event {
            AnyEvent::DocumentParsed(e) if e.failure.is_none() => {
                if let Some(uri) = &e.segments_uri {
                    segments = fetch_json(&self.blobs, uri, e.segments_sha256.as_deref(), FailureCode::InvalidSegments).await?;
                }
            }
            AnyEvent::DocumentChunked(e) if e.failure.is_none() => {
                if let Some(uri) = &e.chunks_uri {
                    chunks = fetch_json(&self.blobs, uri, e.chunks_sha256.as_deref(), FailureCode::InvalidChunks).await?;
                }
            }
            _ => {}
        }
        let mut tx = self.pool.begin().await?;
        match self.offsets.claim(&mut tx, msg).await? {
            Claim::AlreadyApplied { next_offset } => {
                debug!(next_offset, "already projected");
                return Ok(Outcome::Duplicate);
            }
            Claim::Apply => {}
        }
        let mut first_ingestion: Option<FirstIngestion> = None;
        if let Some(id) = derived_of {
            if documents::is_deleted_locked(&mut tx, id).await? {
                tx.commit().await?;
                debug!(document_id = %id, "event of a deleted document skipped");
                return Ok(Outcome::Applied);
            }
        }
        match &event {
            AnyEvent::DocumentUploaded(e) => {
                documents::apply_uploaded(&mut tx, e).await?;
                info!(workspace_id = %e.envelope.workspace_id, document_id = %e.document_id,
                      event_id = %e.envelope.event_id, filename = %e.filename, "document uploaded");
            }
            AnyEvent::DocumentDeleted(e) => {
                documents::apply_deleted(&mut tx, e).await?;
                let id = uuid::Uuid::parse_str(&e.document_id).map_err(|err| StageError::invalid(FailureCode::InvalidEvent, err))?;
                let purged = documents::purge(&mut tx, &e.envelope.workspace_id, id).await?;
                info!(workspace_id = %e.envelope.workspace_id, document_id = %e.document_id,
                      event_id = %e.envelope.event_id, search_chunks = purged.search_chunks,
                      chunk_mappings = purged.chunk_mappings, segments = purged.segments, "document deleted and purged");
            }
            AnyEvent::DocumentParsed(e) => {
                // Segments parsed before line ranges existed get them from the tiling.
                let segments = rag_docparse::segments::with_line_ranges(&segments);
                pipeline::apply_parsed(&mut tx, e, &segments).await?;
                info!(workspace_id = %e.envelope.workspace_id, document_id = %e.document_id,
                      event_id = %e.envelope.event_id, segments = segments.len(),
                      failure = e.failure.as_ref().map(|f| f.code.as_str()).unwrap_or(""), "document parsed");
            }
            AnyEvent::DocumentChunked(e) => {
                pipeline::apply_chunked(&mut tx, e, &chunks).await?;
                info!(workspace_id = %e.envelope.workspace_id, document_id = %e.document_id,
                      event_id = %e.envelope.event_id, chunks = chunks.len(), "document chunked");
            }
            AnyEvent::DocumentIngested(e) => {
                // Upload-to-ingested latency, counted once per document.
                if let (None, Ok(id)) = (&e.failure, uuid::Uuid::parse_str(&e.document_id)) {
                    if let Some(uploaded) = documents::awaiting_first_ingestion(&mut tx, id).await? {
                        let millis = (e.envelope.occurred_at - uploaded.timestamp_millis()).max(0) as u64;
                        first_ingestion = Some(FirstIngestion { since_upload: std::time::Duration::from_millis(millis) });
                    }
                }
                pipeline::apply_ingested(&mut tx, e).await?;
                info!(workspace_id = %e.envelope.workspace_id, document_id = %e.document_id,
                      event_id = %e.envelope.event_id, version = %e.chunking_version, "document ingested");
            }
            AnyEvent::QuestionAsked(e) => {
                messages::apply_question_asked(&mut tx, e).await?;
                info!(workspace_id = %e.envelope.workspace_id, conversation_id = %e.conversation_id,
                      event_id = %e.envelope.event_id, message_id = %e.assistant_message_id, "question asked");
            }
            AnyEvent::AnswerProduced(e) => {
                messages::apply_answer_produced(&mut tx, e).await?;
                info!(workspace_id = %e.envelope.workspace_id, conversation_id = %e.conversation_id,
                      event_id = %e.envelope.event_id, message_id = %e.assistant_message_id, mode = %e.mode, "answer projected");
            }
        }
        Failpoint::hit(&self.failpoint, "projector-before-commit").await;
        tx.commit().await?;
        if let Some(e) = first_ingestion {
            e.emit();
        }
        Failpoint::hit(&self.failpoint, "projector-after-commit").await;
        Ok(Outcome::Applied)
    }

    async fn dead_lettered(&self, msg: &Inbound, code: FailureCode, reason: &str) -> Result<(), StageError> {
        let mut tx = self.pool.begin().await?;
        if let Claim::Apply = self.offsets.claim(&mut tx, msg).await? {
            // Document topics are keyed by document id: mark it failed so the
            // user sees why it stopped (unknown ids are ignored).
            // The step is the topic's: its redriven event recovers the
            // document.
            let step = match self.topics.event_of(&msg.topic) {
                Some(EventType::DocumentUploaded) => Some(DocumentStatus::Uploaded),
                Some(EventType::DocumentParsed) => Some(DocumentStatus::Parsed),
                Some(EventType::DocumentChunked) => Some(DocumentStatus::Chunked),
                Some(EventType::DocumentIngested) => Some(DocumentStatus::Ingested),
                _ => None,
            };
            if let (Some(step), Some(key)) = (step, msg.key_str()) {
                let at = msg.timestamp_ms.and_then(chrono::DateTime::from_timestamp_millis).unwrap_or_else(chrono::Utc::now);
                documents::mark_failed(&mut tx, key, step, code.as_str(), reason, at).await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    async fn start_at(&self, topic: &str, partition: i32) -> Result<StartAt, StageError> {
        self.offsets.start_at(topic, partition).await
    }
}
