//! [`StageError`]: what can go wrong in a stage, and the one conversion
//! that decides whether the runner retries it (transient) or dead-letters
//! it (permanent, with a code). The error travels whole as the source of
//! the [`ProcessError`], so logs and dead letters keep its chain.

use std::sync::Arc;

use rag_blobs::BlobError;
use rag_bus::{BusError, FailureCode, ProcessError};
use rag_embed::EmbedError;
use rag_events::CodecError;
use rag_store::StoreError;

use rag_search::retriever::RetrieveError;

#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("blob store: {0}")]
    Blob(#[from] BlobError),
    #[error("producing: {0}")]
    Produce(#[from] BusError),
    #[error("embedding: {0}")]
    Embed(#[from] EmbedError),
    #[error("retrieval: {0}")]
    Retrieve(#[from] RetrieveError),
    #[error("decoding the event: {0}")]
    Decode(#[from] CodecError),
    /// The input itself is unusable (a malformed id, a checksum mismatch,
    /// an unreadable claim-checked payload): retrying cannot help.
    #[error("{reason}")]
    Invalid { code: FailureCode, reason: String },
    /// CPU work on a blocking thread panicked (a parser or chunker bug hit
    /// by this input).
    #[error("{code}: {source}")]
    Crashed {
        code: FailureCode,
        #[source]
        source: tokio::task::JoinError,
    },
    /// Already classified (by the bus or a helper).
    #[error(transparent)]
    Classified(#[from] ProcessError),
}

impl StageError {
    pub fn invalid(code: FailureCode, reason: impl std::fmt::Display) -> Self {
        StageError::Invalid { code, reason: reason.to_string() }
    }
}

impl From<rag_store::sqlx::Error> for StageError {
    fn from(e: rag_store::sqlx::Error) -> Self {
        StageError::Store(e.into())
    }
}

impl From<StageError> for ProcessError {
    fn from(e: StageError) -> Self {
        let code = match &e {
            StageError::Classified(p) => return p.clone(),
            StageError::Store(s) if s.is_transient() => None,
            StageError::Store(_) => Some(FailureCode::InvalidEvent),
            StageError::Blob(b) if b.is_transient() => None,
            StageError::Blob(_) => Some(FailureCode::BlobUnreadable),
            // The producer already retried through broker restarts for
            // minutes; the record stays unprocessed and a restart resumes.
            StageError::Produce(_) => None,
            StageError::Embed(x) if x.is_transient() => None,
            StageError::Embed(_) => Some(FailureCode::EmbeddingFailed),
            StageError::Retrieve(r) if r.is_transient() => None,
            StageError::Retrieve(_) => Some(FailureCode::RetrievalFailed),
            StageError::Decode(c) => Some(FailureCode::from(c)),
            StageError::Invalid { code, .. } | StageError::Crashed { code, .. } => Some(*code),
        };
        let reason = e.to_string();
        let source = Some(Arc::new(e) as rag_bus::ErrorSource);
        match code {
            None => ProcessError::Transient { reason, source },
            Some(code) => ProcessError::Permanent { code, reason, source },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_input_is_permanent_the_infrastructure_transient() {
        let p = ProcessError::from(StageError::invalid(FailureCode::ChecksumMismatch, "s3://b/k: sha256 a, the event says b"));
        assert_eq!(p.code(), Some(FailureCode::ChecksumMismatch));
        let p = ProcessError::from(StageError::Blob(BlobError::BadUri { uri: "x".into(), bucket: "b".into() }));
        assert_eq!(p.code(), Some(FailureCode::BlobUnreadable));
        let p = ProcessError::from(StageError::Embed(EmbedError::Transient("429 Too Many Requests".into())));
        assert!(p.is_transient());
        let p = ProcessError::from(StageError::Store(StoreError::Invalid("chunk without text".into())));
        assert_eq!(p.code(), Some(FailureCode::InvalidEvent));
    }

    #[test]
    fn the_cause_travels_as_the_source_chain() {
        let p = ProcessError::from(StageError::Embed(EmbedError::Transient("429 Too Many Requests".into())));
        let source = std::error::Error::source(&p).expect("the stage error is the source");
        assert!(source.to_string().starts_with("embedding: "), "{source}");
        assert!(std::error::Error::source(source).is_some(), "and the embedder's error below it");
        assert!(p.chain().contains("429 Too Many Requests"), "{}", p.chain());
    }

    #[test]
    fn an_already_classified_error_passes_through() {
        let p = ProcessError::from(StageError::Classified(ProcessError::permanent(FailureCode::WrongTopic, "never")));
        assert_eq!((p.code(), p.reason()), (Some(FailureCode::WrongTopic), "never"));
    }
}
