//! The indexer stage: DocumentChunked -> search index -> DocumentIngested.
//! The sole writer of the search index. Kafka -> Postgres: the index rows
//! and the partition offset commit in one transaction; DocumentIngested is
//! produced after the commit, and produced again if the input is
//! re-delivered (same deterministic event id), so it is never lost: the
//! stage resumes at Kafka's committed offset when that is behind its own
//! ([`StartAt::AppliedBefore`]), as Kafka's moves only once the output is
//! delivered.

use rag_blobs::BlobStore;
use rag_bus::{FailureCode, Inbound, Outcome, Positions, Stage, StageIdentity, StageOutput, StartAt};
use rag_chunking::Chunk;
use rag_embed::Embedder;
use rag_events::{DocumentChunked, DocumentIngested, Envelope, EventType};
use rag_store::documents::{self, DocumentStatus};
use rag_store::offsets::Claim;
use rag_store::pipeline::{self, IndexedChunk};
use tracing::info;

use crate::common::*;
use crate::error::StageError;
use crate::failpoint::Failpoint;
use crate::pg_offsets::PgOffsets;

pub const STAGE: &str = "indexer";
pub const GROUP: &str = "rag-indexer";

pub fn identity() -> StageIdentity {
    StageIdentity {
        name: STAGE,
        group: GROUP.into(),
        consumes: vec![EventType::DocumentChunked],
        produces: vec![EventType::DocumentIngested],
        positions: Positions::Postgres,
        max_in_flight: None,
    }
}

pub struct Indexer {
    pub blobs: BlobStore,
    pub output: StageOutput,
    /// Under the full consumer group name.
    pub offsets: PgOffsets,
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
            envelope: Envelope::caused_by(&input.envelope, STAGE, producer_name(STAGE)),
            document_id: input.document_id.clone(),
            chunking_version: input.chunking_version.clone(),
            embedding_model: self.embedder.identity().map(|(m, _)| m.to_string()),
            embedding_dimension: self.embedder.identity().map(|(_, d)| d as i32),
            chunk_count,
            failure: None,
            revision: input.revision,
        }
    }

    async fn emit(&self, event: &DocumentIngested) -> Result<(), StageError> {
        if self.emit {
            self.output.send(event).await?;
        }
        Ok(())
    }
}

impl Stage for Indexer {
    type Error = StageError;

    fn identity(&self) -> StageIdentity {
        let id = identity();
        if self.emit {
            id
        } else {
            StageIdentity { produces: Vec::new(), ..id }
        }
    }

    async fn process(&self, msg: &Inbound) -> Result<Outcome, StageError> {
        let input: DocumentChunked = decode(self.output.codec(), msg)?;
        // A deleted document is not indexed again (its blobs are gone too).
        let document = uuid::Uuid::parse_str(&input.document_id).map_err(|e| StageError::invalid(FailureCode::InvalidEvent, e))?;
        let pool = self.offsets.pool();
        if documents::status_of(pool, document).await? == Some(DocumentStatus::Deleted) {
            self.offsets.skip(msg).await?;
            info!(document_id = %input.document_id, "deleted document not indexed");
            return Ok(Outcome::Applied);
        }
        let chunks: Vec<Chunk> = match (&input.failure, &input.chunks_uri) {
            (None, Some(uri)) => fetch_json(&self.blobs, uri, input.chunks_sha256.as_deref(), FailureCode::InvalidChunks).await?,
            _ => Vec::new(),
        };
        let texts: Vec<String> = chunks.iter().map(|c| c.text.trim().to_string()).collect();
        let mut embeddings = self.embedder.embed(&texts, rag_embed::InputKind::Passage).await?.into_iter();
        let indexed: Vec<IndexedChunk<'_>> = chunks
            .iter()
            .map(|c| {
                let (terms, term_count) = rag_lexical::document_terms(&c.text, rag_retrieval::document_analysis(&c.text));
                IndexedChunk { chunk: c, terms, term_count, embedding: embeddings.next() }
            })
            .collect();
        let output = self.ingested(&input, chunks.len() as i32);
        let mut tx = pool.begin().await?;
        if let Claim::AlreadyApplied { .. } = self.offsets.claim(&mut tx, msg).await? {
            drop(tx);
            if input.failure.is_none() {
                self.emit(&output).await?;
            }
            return Ok(Outcome::Duplicate);
        }
        if documents::is_deleted_locked(&mut tx, document).await? {
            tx.commit().await?;
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
                &rag_model::index_version(&input.chunking_version, input.revision),
                model,
                &indexed,
                at,
            )
            .await?;
        }
        Failpoint::hit(&self.failpoint, "indexer-before-commit").await;
        tx.commit().await?;
        Failpoint::hit(&self.failpoint, "indexer-after-commit").await;
        if input.failure.is_none() {
            info!(workspace_id = %input.envelope.workspace_id, document_id = %input.document_id,
                  version = %input.chunking_version, revision = input.revision, chunks = chunks.len(), "document indexed");
            self.emit(&output).await?;
        }
        Ok(Outcome::Applied)
    }

    async fn dead_lettered(&self, msg: &Inbound, _code: FailureCode, _reason: &str) -> Result<(), StageError> {
        self.offsets.skip(msg).await
    }

    /// DocumentIngested is produced after the index commits: resume where
    /// the output is known delivered, so a crash in between re-emits it.
    async fn start_at(&self, topic: &str, partition: i32) -> Result<StartAt, StageError> {
        self.offsets.start_at_output_after_commit(topic, partition).await
    }
}
