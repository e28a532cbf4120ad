//! The chunker stage: DocumentParsed -> DocumentChunked, with one chunking
//! profile. Its consumer group is per profile version, so starting a new
//! profile re-chunks every retained DocumentParsed beside the old version.

use std::sync::Arc;

use rag_blobs::BlobStore;
use rag_bus::{FailureCode, Inbound, Outcome, Positions, ProcessError, Stage, StageIdentity, StageOutput};
use rag_chunking::{ChunkingProfile, TokenCounter};
use rag_docparse::Segment;
use rag_events::{DocumentChunked, DocumentParsed, Envelope, EventType, Failure};
use rag_telemetry::InternalEvent;
use tracing::info;

use crate::common::*;
use crate::error::StageError;

pub const STAGE: &str = "chunker";

/// Consumer group of a profile version.
pub fn group(profile: &ChunkingProfile) -> String {
    format!("rag-chunker.{}", profile.id())
}

pub fn identity(profile: &ChunkingProfile) -> StageIdentity {
    StageIdentity {
        name: STAGE,
        group: group(profile),
        consumes: vec![EventType::DocumentParsed],
        produces: vec![EventType::DocumentChunked],
        positions: Positions::Kafka,
        max_in_flight: None,
    }
}

pub struct Chunker {
    pub blobs: BlobStore,
    pub output: StageOutput,
    pub profile: ChunkingProfile,
    pub counter: Arc<dyn TokenCounter>,
}

impl Stage for Chunker {
    type Error = StageError;

    fn identity(&self) -> StageIdentity {
        identity(&self.profile)
    }

    async fn process(&self, msg: &Inbound) -> Result<Outcome, StageError> {
        let input: DocumentParsed = decode(self.output.codec(), msg)?;
        if input.failure.is_some() {
            // Nothing to chunk; the projector already records the failure.
            return Ok(Outcome::Applied);
        }
        let stage_id = format!("{STAGE}:{}", self.profile.id());
        let mut out = DocumentChunked {
            envelope: Envelope::caused_by(&input.envelope, &stage_id, producer_name(STAGE)),
            document_id: input.document_id.clone(),
            chunking_profile: self.profile.name.clone(),
            chunking_version: self.profile.id(),
            chunk_count: None,
            chunks_uri: None,
            chunks_sha256: None,
            instructions_found: None,
            failure: None,
            revision: input.revision,
        };
        let segments: Result<Vec<Segment>, StageError> = async {
            let uri = input.segments_uri.as_deref().ok_or_else(|| StageError::invalid(FailureCode::InvalidEvent, "no segments_uri"))?;
            fetch_json(&self.blobs, uri, input.segments_sha256.as_deref(), FailureCode::InvalidSegments).await
        }
        .await;
        // Segments that cannot be read are the document's failure: it is
        // marked failed with the reason, and the stage moves on.
        let segments = match segments.map_err(ProcessError::from) {
            Ok(s) => s,
            Err(ProcessError::Permanent { code, reason, .. }) => {
                out.failure = Some(Failure { code: code.as_str().into(), message: reason });
                self.output.send(&out).await?;
                return Ok(Outcome::Applied);
            }
            Err(e) => return Err(e.into()),
        };
        let (doc_id, revision, profile, counter) = (input.document_id.clone(), input.revision, self.profile.clone(), self.counter.clone());
        // Sentences written to the model are counted here, once per
        // chunking, so an operator can find the documents that hold them.
        let (chunks, instructions) = tokio::task::spawn_blocking(move || {
            let instructions: usize = segments.iter().map(|s| rag_answer::injection::count_in(&s.text)).sum();
            (rag_chunking::chunk_revision(&doc_id, revision, &segments, &profile, counter.as_ref()), instructions)
        })
        .await
        .map_err(|source| StageError::Crashed { code: FailureCode::ChunkerCrashed, source })?;
        let json = serde_json::to_vec(&chunks).map_err(|e| StageError::invalid(FailureCode::Encode, e))?;
        // Object keys stay plain ASCII without '@' (some S3 servers map keys to file names).
        let kind = format!("chunks-{}-v{}", self.profile.name, self.profile.version);
        let (uri, sha) =
            store_derived(&self.blobs, &input.envelope.workspace_id, &input.document_id, &kind, "json", json, "application/json").await?;
        out.chunk_count = Some(chunks.len() as i32);
        out.chunks_uri = Some(uri);
        out.chunks_sha256 = Some(sha);
        out.instructions_found = Some(instructions as i32);
        if instructions > 0 {
            rag_telemetry::events::InstructionsFound {
                workspace_id: &input.envelope.workspace_id,
                document_id: &input.document_id,
                sentences: instructions,
            }
            .emit();
        }
        info!(workspace_id = %input.envelope.workspace_id, document_id = %input.document_id,
              version = %self.profile.id(), revision = input.revision, chunks = chunks.len(), instructions, "document chunked");
        self.output.send(&out).await?;
        Ok(Outcome::Applied)
    }
}
