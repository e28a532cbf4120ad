//! The document status rule: a document's lifecycle, the rank that only
//! grows (both `rag-model`'s, re-exported here), and the same rule in SQL
//! over the projected step bits (migration 20261124000011). The documents
//! and the pipeline read models both write statuses by it.

pub use rag_model::status::{DocumentStatus, UnknownStatus};

use crate::StoreError;

impl From<UnknownStatus> for StoreError {
    fn from(e: UnknownStatus) -> StoreError {
        StoreError::Invalid(e.to_string())
    }
}

/// SQL: the rank of the last success step of the unbroken run from the
/// upload in the step bits `bits` (-1: the upload itself is missing).
pub(crate) fn contiguous_rank(bits: &str) -> String {
    format!(
        "(CASE WHEN {bits} & 15 = 15 THEN 3 WHEN {bits} & 7 = 7 THEN 2 WHEN {bits} & 3 = 3 THEN 1 WHEN {bits} & 1 = 1 THEN 0 ELSE -1 END)"
    )
}

/// SQL: the success status of a rank from [`contiguous_rank`].
pub(crate) fn status_of_rank(rank: &str) -> String {
    format!("(CASE {rank} WHEN 3 THEN 'ingested' WHEN 2 THEN 'chunked' WHEN 1 THEN 'parsed' ELSE 'uploaded' END)")
}
