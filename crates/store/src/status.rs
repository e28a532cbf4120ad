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
/// upload in the step bits `bits` (-1: the upload itself is missing):
/// [`DocumentStatus::last_unbroken_step`], generated from its steps.
pub(crate) fn contiguous_rank(bits: &str) -> String {
    let mut mask = 0;
    let mut arms: Vec<String> = DocumentStatus::STEPS
        .iter()
        .map(|step| {
            mask |= step.step_bit();
            format!("WHEN {bits} & {mask} = {mask} THEN {}", step.rank())
        })
        .collect();
    // The longest run first: CASE takes the first arm that holds.
    arms.reverse();
    format!("(CASE {} ELSE -1 END)", arms.join(" "))
}

/// SQL: the success status of a rank from [`contiguous_rank`].
pub(crate) fn status_of_rank(rank: &str) -> String {
    let arms: Vec<String> =
        DocumentStatus::STEPS.iter().rev().map(|step| format!("WHEN {} THEN '{}'", step.rank(), step.as_str())).collect();
    format!("(CASE {rank} {} ELSE 'uploaded' END)", arms.join(" "))
}
