//! The document status rule: a document's lifecycle and the rank that only
//! grows. The read models write statuses by it (`rag_store::status` holds
//! the same rule in SQL); the API shows them by their lowercase names.

use serde::{Deserialize, Serialize};

/// Lifecycle of a document. The rank only grows: a late, earlier event fills
/// in what it carries but never moves the status back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

    /// The success steps, in pipeline order: their ranks are 0 to 3 and
    /// their bits in a document's projected steps `1 << rank`.
    pub const STEPS: [DocumentStatus; 4] =
        [DocumentStatus::Uploaded, DocumentStatus::Parsed, DocumentStatus::Chunked, DocumentStatus::Ingested];

    /// This step's bit in the projected step bits; 0 for a status that is
    /// not a step (failed, deleted).
    pub fn step_bit(self) -> i16 {
        if Self::STEPS.contains(&self) {
            1 << self.rank()
        } else {
            0
        }
    }

    /// The rule the read models show a status by: the last step of the
    /// unbroken run from the upload in `bits` (a step projected before its
    /// predecessor does not count yet); None when the upload itself is
    /// missing. `rag_store::status` writes this same rule in SQL.
    pub fn last_unbroken_step(bits: i16) -> Option<DocumentStatus> {
        Self::STEPS.iter().take_while(|step| bits & step.step_bit() != 0).last().copied()
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

/// A name that is no [`DocumentStatus`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStatus(pub String);

impl std::fmt::Display for UnknownStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown document status {:?}", self.0)
    }
}

impl std::error::Error for UnknownStatus {}

impl std::str::FromStr for DocumentStatus {
    type Err = UnknownStatus;
    fn from_str(s: &str) -> Result<Self, UnknownStatus> {
        Ok(match s {
            "uploaded" => DocumentStatus::Uploaded,
            "parsed" => DocumentStatus::Parsed,
            "chunked" => DocumentStatus::Chunked,
            "ingested" => DocumentStatus::Ingested,
            "failed" => DocumentStatus::Failed,
            "deleted" => DocumentStatus::Deleted,
            other => return Err(UnknownStatus(other.to_string())),
        })
    }
}

impl TryFrom<String> for DocumentStatus {
    type Error = UnknownStatus;
    fn try_from(s: String) -> Result<Self, UnknownStatus> {
        s.parse()
    }
}

impl std::fmt::Display for DocumentStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
