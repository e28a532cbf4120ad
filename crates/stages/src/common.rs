//! Helpers shared by the stage processors.

use rag_blobs::{BlobError, BlobStore};
use rag_bus::{Inbound, ProcessError};
use rag_events::{Codec, Event};
use sha2::{Digest, Sha256};

pub fn decode<E: Event>(codec: &Codec, msg: &Inbound) -> Result<E, ProcessError> {
    let payload = msg.payload.as_deref().unwrap_or_default();
    codec.decode::<E>(payload).map_err(|e| ProcessError::permanent(e.code(), e.to_string()))
}

pub fn blob_err(e: BlobError) -> ProcessError {
    if e.is_transient() {
        ProcessError::Transient(e.to_string())
    } else {
        ProcessError::permanent("blob_unreadable", e.to_string())
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Reads a claim-checked payload and verifies its checksum.
pub async fn fetch_verified(blobs: &BlobStore, uri: &str, sha256: Option<&str>) -> Result<Vec<u8>, ProcessError> {
    let key = blobs.key_of(uri).map_err(|e| ProcessError::permanent("blob_unreadable", e.to_string()))?;
    let bytes = blobs.get(key).await.map_err(blob_err)?;
    if let Some(expected) = sha256 {
        let actual = sha256_hex(&bytes);
        if actual != expected {
            return Err(ProcessError::permanent("checksum_mismatch", format!("{uri}: sha256 {actual}, the event says {expected}")));
        }
    }
    Ok(bytes)
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
) -> Result<(String, String), ProcessError> {
    let sha = sha256_hex(&bytes);
    let key = format!("{}{kind}/{}.{ext}", derived_prefix(workspace_id, document_id), &sha[..32]);
    let stored = blobs.put_bytes(&key, bytes, content_type).await.map_err(blob_err)?;
    Ok((stored.uri, sha))
}

pub fn produce_err(e: rag_bus::BusError) -> ProcessError {
    ProcessError::Transient(format!("producing: {e}"))
}
