//! The indexer stage: DocumentChunked -> search index -> DocumentIngested.
//! The sole writer of the search index. Kafka -> Postgres: the index rows
//! and the partition offset commit in one transaction; DocumentIngested is
//! produced after the commit, and produced again if the input is
//! re-delivered (same deterministic event id), so it is never lost: the
//! stage resumes at Kafka's committed offset when that is behind its own
//! ([`StartAt::AppliedBefore`]), as Kafka's moves only once the output is
//! delivered.

use rag_blobs::BlobStore;
use rag_bus::{EventProducer, Inbound, Outcome, ProcessError, Processor, StartAt};
use rag_chunking::Chunk;
use rag_embed::Embedder;
use rag_events::{DocumentChunked, DocumentIngested, Envelope, EventType};
use rag_store::documents;
use rag_store::offsets::{self, Claim};
use rag_store::pipeline::{self, IndexedChunk};
use rag_store::sqlx::PgPool;
use tracing::info;

use crate::common::*;
use crate::failpoint::Failpoint;
use crate::projector::store_err;

pub const STAGE: &str = "indexer";
pub const GROUP: &str = "rag-indexer";
pub const CONSUMES: &[EventType] = &[EventType::DocumentChunked];

pub struct Indexer {
    pub pool: PgPool,
    pub blobs: BlobStore,
    pub output: EventProducer,
    /// Full consumer group name (offsets are stored under it).
    pub group: String,
    pub failpoint: Option<Failpoint>,
    pub embedder: Embedder,
    /// Whether to produce DocumentIngested. A rebuild of the read models
    /// re-indexes from the retained events, whose DocumentIngested are
    /// already on the topic: it must not add new ones.
    pub emit: bool,
}

impl Indexer {
    fn ingested(&self, input: &DocumentChunked, chunk_count: i32) -> DocumentIngested {
        DocumentIngested {
            envelope: Envelope::caused_by(&input.envelope, STAGE, format!("rag-engine/{STAGE}@{}", env!("CARGO_PKG_VERSION"))),
            document_id: input.document_id.clone(),
            chunking_version: input.chunking_version.clone(),
            embedding_model: self.embedder.identity().map(|(m, _)| m.to_string()),
            embedding_dimension: self.embedder.identity().map(|(_, d)| d as i32),
            chunk_count,
            failure: None,
        }
    }

    async fn emit(&self, event: &DocumentIngested) -> Result<(), ProcessError> {
        if !self.emit {
            return Ok(());
        }
        self.output.send(event).await.map_err(produce_err)?;
        rag_bus::stage::record_out(STAGE, &self.output.config().topics.of(EventType::DocumentIngested));
        Ok(())
    }
}

impl Processor for Indexer {
    async fn process(&self, msg: &Inbound) -> Result<Outcome, ProcessError> {
        let input: DocumentChunked = decode(self.output.codec(), msg)?;
        // A deleted document is not indexed again (its blobs are gone too).
        let document = uuid::Uuid::parse_str(&input.document_id).map_err(|e| ProcessError::permanent("invalid_event", e.to_string()))?;
        if documents::status_of(&self.pool, document).await.map_err(store_err)?.as_deref() == Some("deleted") {
            crate::projector::skip_offset(&self.pool, &self.group, msg).await?;
            info!(document_id = %input.document_id, "deleted document not indexed");
            return Ok(Outcome::Applied);
        }
        let chunks: Vec<Chunk> = match (&input.failure, &input.chunks_uri) {
            (None, Some(uri)) => {
                let bytes = fetch_verified(&self.blobs, uri, input.chunks_sha256.as_deref()).await?;
                serde_json::from_slice(&bytes).map_err(|e| ProcessError::permanent("invalid_chunks", e.to_string()))?
            }
            _ => Vec::new(),
        };
        let texts: Vec<String> = chunks.iter().map(|c| c.text.trim().to_string()).collect();
        let mut embeddings = self
            .embedder
            .embed(&texts, rag_embed::InputKind::Passage)
            .await
            .map_err(|e| {
                if e.is_transient() {
                    ProcessError::Transient(e.to_string())
                } else {
                    ProcessError::permanent("embedding_failed", e.to_string())
                }
            })?
            .into_iter();
        let indexed: Vec<IndexedChunk<'_>> = chunks
            .iter()
            .map(|c| {
                let (terms, term_count) = rag_lexical::document_terms(&c.text);
                IndexedChunk { chunk: c, terms, term_count, embedding: embeddings.next() }
            })
            .collect();
        let output = self.ingested(&input, chunks.len() as i32);
        let mut tx = self.pool.begin().await.map_err(|e| store_err(e.into()))?;
        if let Claim::AlreadyApplied { .. } =
            offsets::claim(&mut tx, &self.group, &msg.topic, msg.partition, msg.offset).await.map_err(store_err)?
        {
            drop(tx);
            if input.failure.is_none() {
                self.emit(&output).await?;
            }
            return Ok(Outcome::Duplicate);
        }
        if documents::is_deleted_locked(&mut tx, document).await.map_err(store_err)? {
            tx.commit().await.map_err(|e| store_err(e.into()))?;
            info!(document_id = %input.document_id, "deleted while indexing; not indexed");
            return Ok(Outcome::Applied);
        }
        if input.failure.is_none() {
            let model = self.embedder.identity().map(|(m, _)| m);
            let at = chrono::DateTime::from_timestamp_millis(input.envelope.occurred_at).unwrap_or_else(chrono::Utc::now);
            pipeline::replace_index(
                &mut tx,
                &input.envelope.workspace_id,
                &input.document_id,
                &input.chunking_version,
                model,
                &indexed,
                at,
            )
            .await
            .map_err(store_err)?;
        }
        Failpoint::hit(&self.failpoint, "indexer-before-commit").await;
        tx.commit().await.map_err(|e| store_err(e.into()))?;
        Failpoint::hit(&self.failpoint, "indexer-after-commit").await;
        if input.failure.is_none() {
            info!(workspace_id = %input.envelope.workspace_id, document_id = %input.document_id,
                  version = %input.chunking_version, chunks = chunks.len(), "document indexed");
            self.emit(&output).await?;
        }
        Ok(Outcome::Applied)
    }

    async fn dead_lettered(&self, msg: &Inbound, _code: &str, _reason: &str) -> Result<(), ProcessError> {
        crate::projector::skip_offset(&self.pool, &self.group, msg).await
    }

    /// DocumentIngested is produced after the index commits: resume where
    /// the output is known delivered, so a crash in between re-emits it.
    async fn start_at(&self, topic: &str, partition: i32) -> Result<StartAt, ProcessError> {
        Ok(match crate::projector::stored_start(&self.pool, &self.group, topic, partition).await? {
            StartAt::Offset(n) => StartAt::AppliedBefore(n),
            other => other,
        })
    }
}
