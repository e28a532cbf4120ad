//! Helpers shared by the stage processors.

use rag_blobs::BlobStore;
use rag_bus::{FailureCode, Inbound};
use rag_events::{Codec, Event};
use sha2::{Digest, Sha256};

use crate::error::StageError;

pub fn decode<E: Event>(codec: &Codec, msg: &Inbound) -> Result<E, StageError> {
    Ok(codec.decode::<E>(msg.payload.as_deref().unwrap_or_default())?)
}

/// The `rag-engine/<stage>@<version>` producer name of an envelope.
pub fn producer_name(stage: &str) -> String {
    format!("rag-engine/{stage}@{}", env!("CARGO_PKG_VERSION"))
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Reads a claim-checked payload and verifies its checksum.
pub async fn fetch_verified(blobs: &BlobStore, uri: &str, sha256: Option<&str>) -> Result<Vec<u8>, StageError> {
    let bytes = blobs.get(blobs.key_of(uri)?).await?;
    if let Some(expected) = sha256 {
        let actual = sha256_hex(&bytes);
        if actual != expected {
            return Err(StageError::invalid(FailureCode::ChecksumMismatch, format!("{uri}: sha256 {actual}, the event says {expected}")));
        }
    }
    Ok(bytes)
}

/// A claim-checked JSON payload (segments, chunks), read and verified.
pub async fn fetch_json<T: serde::de::DeserializeOwned>(
    blobs: &BlobStore,
    uri: &str,
    sha256: Option<&str>,
    code: FailureCode,
) -> Result<T, StageError> {
    let bytes = fetch_verified(blobs, uri, sha256).await?;
    serde_json::from_slice(&bytes).map_err(|e| StageError::invalid(code, format!("{uri}: {e}")))
}

/// Where every blob derived from a document lives (deletion removes it all).
pub fn derived_prefix(workspace_id: &str, document_id: &str) -> String {
    format!("w/{workspace_id}/d/{document_id}/")
}

/// Stores a derived payload under a content-addressed key inside the
/// document's prefix (so deleting a document removes all of it). Keys are
/// kept short: s3s-fs (the local stack) turns each key into a file name of
/// its base64, which must fit in 255 bytes. The event carries the full
/// SHA-256; the key uses its first 128 bits.
pub async fn store_derived(
    blobs: &BlobStore,
    workspace_id: &str,
    document_id: &str,
    kind: &str,
    ext: &str,
    bytes: Vec<u8>,
    content_type: &str,
) -> Result<(String, String), StageError> {
    let sha = sha256_hex(&bytes);
    let key = format!("{}{kind}/{}.{ext}", derived_prefix(workspace_id, document_id), &sha[..32]);
    let stored = blobs.put_bytes(&key, bytes, content_type).await?;
    Ok((stored.uri, sha))
}
