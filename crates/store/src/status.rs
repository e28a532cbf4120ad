//! The document status rule: a document's lifecycle, the rank that only
//! grows, and the same rule in SQL over the projected step bits
//! (migration 20261124000011). The documents and the pipeline read models
//! both write statuses by it.

use serde::Serialize;

use crate::StoreError;

/// Lifecycle of a document. The rank only grows: a late, earlier event fills
/// in what it carries but never moves the status back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DocumentStatus {
    Uploaded,
    Parsed,
    Chunked,
    Ingested,
    Failed,
    Deleted,
}

impl DocumentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DocumentStatus::Uploaded => "uploaded",
            DocumentStatus::Parsed => "parsed",
            DocumentStatus::Chunked => "chunked",
            DocumentStatus::Ingested => "ingested",
            DocumentStatus::Failed => "failed",
            DocumentStatus::Deleted => "deleted",
        }
    }

    /// Still moving through the pipeline (not ingested, failed or deleted).
    pub fn in_progress(self) -> bool {
        matches!(self, DocumentStatus::Uploaded | DocumentStatus::Parsed | DocumentStatus::Chunked)
    }

    pub fn rank(self) -> i16 {
        match self {
            DocumentStatus::Uploaded => 0,
            DocumentStatus::Parsed => 1,
            DocumentStatus::Chunked => 2,
            DocumentStatus::Ingested => 3,
            DocumentStatus::Failed => 10,
            DocumentStatus::Deleted => 20,
        }
    }
}

impl std::str::FromStr for DocumentStatus {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<Self, StoreError> {
        Ok(match s {
            "uploaded" => DocumentStatus::Uploaded,
            "parsed" => DocumentStatus::Parsed,
            "chunked" => DocumentStatus::Chunked,
            "ingested" => DocumentStatus::Ingested,
            "failed" => DocumentStatus::Failed,
            "deleted" => DocumentStatus::Deleted,
            other => return Err(StoreError::Invalid(format!("unknown document status {other:?}"))),
        })
    }
}

impl TryFrom<String> for DocumentStatus {
    type Error = StoreError;
    fn try_from(s: String) -> Result<Self, StoreError> {
        s.parse()
    }
}

impl std::fmt::Display for DocumentStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
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
