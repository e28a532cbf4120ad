//! An upload, the same from the CLI and the API: the original's bytes go
//! to object storage under a content-addressed key of the workspace
//! (identical bytes are stored once), then `DocumentUploaded` announces
//! them (claim-check: the event carries the URI and checksum, never the
//! bytes). The event is produced only once the bytes are durable, and
//! `Ok` means the broker has it too.

use std::collections::HashMap;
use std::path::Path;

use rag_blobs::{BlobError, BlobStore};
use rag_bus::{BusError, EventProducer};
use rag_events::{DocumentUploaded, Envelope};
use rag_telemetry::events::UploadRecorded;
use rag_telemetry::InternalEvent;

/// The original, already on local disk and hashed.
#[derive(Debug, Clone, Copy)]
pub struct Original<'a> {
    pub path: &'a Path,
    pub size: u64,
    pub sha256: &'a str,
}

/// Who uploads what, and where.
#[derive(Debug, Clone)]
pub struct NewDocument {
    pub workspace_id: String,
    pub filename: String,
    pub content_type: String,
    pub uploaded_by: String,
    pub metadata: HashMap<String, String>,
    /// The envelope's producer (`rag-engine/cli@…`, `rag-engine/api@…`).
    pub producer: String,
    /// Set when the bytes are a new revision of an existing document (its
    /// id stays), or the first revision of a document whose id is chosen
    /// (a source's file); None for a new document.
    pub revision_of: Option<NextRevision>,
    /// The event's id, when it must be the same each time these bytes are
    /// announced (a source's sync run again); None: a fresh UUIDv7.
    pub event_id: Option<uuid::Uuid>,
}

/// A new revision of an existing document: its id, the revision number
/// allocated for it (`rag_store::documents::allocate_revision`) and the
/// content hash of the revision it replaces.
#[derive(Debug, Clone)]
pub struct NextRevision {
    pub document_id: String,
    pub revision: i32,
    pub replaces_sha256: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    #[error("invalid workspace id {0:?}")]
    Workspace(String),
    #[error("storing the original: {0}")]
    Store(#[from] BlobError),
    #[error("producing DocumentUploaded: {0}")]
    Announce(#[from] BusError),
}

/// The object key of an original: per workspace, by content.
pub fn original_key(workspace_id: &str, sha256: &str) -> String {
    format!("workspaces/{workspace_id}/originals/{sha256}")
}

/// Stores `original` (unless the same bytes are there already) and
/// produces its `DocumentUploaded`, which is returned.
pub async fn store_and_announce(
    blobs: &BlobStore,
    producer: &EventProducer,
    original: Original<'_>,
    doc: NewDocument,
) -> Result<DocumentUploaded, UploadError> {
    let mut took = Took::default();
    let result = upload(blobs, producer, original, &doc, &mut took).await;
    UploadRecorded {
        workspace_id: &doc.workspace_id,
        filename: &doc.filename,
        document_id: result.as_ref().ok().map(|e| e.document_id.as_str()),
        error: result.as_ref().err().map(|e| e.to_string()).as_deref(),
        store: took.store,
        produce: took.produce,
    }
    .emit();
    result
}

/// How long the object store and the broker each took: a slow upload's
/// log line says which.
#[derive(Default)]
struct Took {
    store: std::time::Duration,
    produce: std::time::Duration,
}

async fn upload(
    blobs: &BlobStore,
    producer: &EventProducer,
    original: Original<'_>,
    doc: &NewDocument,
    took: &mut Took,
) -> Result<DocumentUploaded, UploadError> {
    if !rag_events::is_workspace_id(&doc.workspace_id) {
        return Err(UploadError::Workspace(doc.workspace_id.clone()));
    }
    let key = original_key(&doc.workspace_id, original.sha256);
    let storing = std::time::Instant::now();
    let blob_uri = match blobs.head(&key).await? {
        Some(existing) if existing == original.size => blobs.uri(&key),
        _ => blobs.put_file(&key, original.path, original.size, original.sha256, &doc.content_type).await?.uri,
    };
    took.store = storing.elapsed();
    let (document_id, revision, replaces_sha256) = match &doc.revision_of {
        Some(next) => (next.document_id.clone(), next.revision, next.replaces_sha256.clone()),
        None => (uuid::Uuid::now_v7().to_string(), rag_events::FIRST_REVISION, None),
    };
    let mut envelope = Envelope::originating(&doc.workspace_id, &doc.producer);
    if let Some(id) = doc.event_id {
        envelope.event_id = id.to_string();
        envelope.correlation_id = id.to_string();
    }
    let event = DocumentUploaded {
        envelope,
        document_id,
        blob_uri,
        filename: doc.filename.clone(),
        content_type: doc.content_type.clone(),
        size_bytes: original.size as i64,
        sha256: original.sha256.to_string(),
        uploaded_by: doc.uploaded_by.clone(),
        metadata: doc.metadata.clone(),
        revision,
        replaces_sha256,
    };
    let producing = std::time::Instant::now();
    producer.send(&event).await?;
    took.produce = producing.elapsed();
    Ok(event)
}

#[cfg(test)]
mod tests {
    #[test]
    fn originals_are_content_addressed_per_workspace() {
        assert_eq!(super::original_key("ws-1", "ab12"), "workspaces/ws-1/originals/ab12");
        assert_ne!(super::original_key("ws-1", "ab12"), super::original_key("ws-2", "ab12"));
    }
}
