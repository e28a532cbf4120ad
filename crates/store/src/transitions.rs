//! How a document's status moves: a success step, a failed step, a dead
//! letter, and the recovery from a failure. The rule itself (ranks, the
//! unbroken run over the step bits) is in [`crate::status`]; this module
//! writes it.
//!
//! Recovery is by step, not by time: a failure records which step failed
//! (`failed_steps`, migration 20261128000017) and a later success of that
//! very step clears it. A success and the failure of the same step are on
//! the same topic and partition (keyed by document id), so "later" is the
//! topic's order, which no clock can get wrong; a redriven dead letter is
//! republished after the failure it caused. The document shows its status
//! again once no failed step is left and the run from the upload is
//! unbroken, in whatever order the topics are projected.

use chrono::{DateTime, Utc};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use crate::status::{contiguous_rank, status_of_rank, DocumentStatus};
use crate::StoreError;

/// What a projected event says about its step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepOutcome {
    /// The step succeeded. A causeless event (an upstream system's
    /// DocumentParsed, say) starts the document's run: no earlier step will
    /// come, so it counts for every step up to its own.
    Succeeded { step: DocumentStatus, starts_run: bool },
    /// The step failed.
    Failed { step: DocumentStatus },
}

impl StepOutcome {
    /// The step bits this outcome sets in `projected_steps` (a success) or
    /// in `failed_steps` (a failure).
    fn bits(self) -> i16 {
        match self {
            StepOutcome::Succeeded { step, starts_run: false } => step_bit(step),
            StepOutcome::Succeeded { step, starts_run: true } => (step_bit(step) << 1) - 1,
            StepOutcome::Failed { step } => step_bit(step),
        }
    }
}

/// The bit of a success step (bit 0 uploaded … bit 3 ingested); 0 for the
/// statuses that are not steps.
pub(crate) fn step_bit(step: DocumentStatus) -> i16 {
    step.step_bit()
}

/// Applies one step's outcome to the document's status (creating the row if
/// this event is the first of the document to land). Moves the status
/// forward only, except that a failure stops it and the success of every
/// failed step recovers it. `at` is when the event occurred.
pub(crate) async fn apply_step(
    tx: &mut Transaction<'_, Postgres>,
    id: Uuid,
    workspace_id: &str,
    outcome: StepOutcome,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let success = matches!(outcome, StepOutcome::Succeeded { .. });
    let bits = outcome.bits();
    // A success marks its step projected; the status shown is the last step
    // of the unbroken run from the upload (migration 20261124000011). A row
    // this event creates starts at `uploaded` until its upload is projected.
    let own = contiguous_rank("$5");
    let reached = contiguous_rank("(documents.projected_steps | $5)");
    let failed = DocumentStatus::Failed.rank();
    // Recovery: no failed step left once this success clears its own, and
    // an unbroken run from the upload to show.
    let recovers = format!("($4 AND documents.status = 'failed' AND (documents.failed_steps & ~($5::smallint)) = 0 AND {reached} >= 0)");
    let moves = format!("(CASE WHEN $4 THEN documents.status_rank < {reached} OR {recovers} ELSE documents.status_rank < {failed} END)");
    sqlx::query(&format!(
        "INSERT INTO documents (id, workspace_id, status, status_rank, updated_at, failed_at, projected_steps, failed_steps, succeeded_at)
         VALUES ($1, $2, CASE WHEN $4 THEN {own_status} ELSE 'failed' END, CASE WHEN $4 THEN GREATEST({own}, 0) ELSE {failed} END,
                 $3, CASE WHEN $4 THEN NULL ELSE $3 END, CASE WHEN $4 THEN $5 ELSE 0 END, CASE WHEN $4 THEN 0 ELSE $5 END,
                 CASE WHEN $4 THEN $3 END)
         ON CONFLICT (id) DO UPDATE SET
            status = CASE WHEN NOT {moves} THEN documents.status WHEN $4 THEN {reached_status} ELSE 'failed' END,
            status_rank = CASE WHEN NOT {moves} THEN documents.status_rank WHEN $4 THEN {reached} ELSE {failed} END,
            failure_code = CASE WHEN {recovers} THEN NULL ELSE documents.failure_code END,
            failure_reason = CASE WHEN {recovers} THEN NULL ELSE documents.failure_reason END,
            -- The latest failure's time (the reason shown is that failure's).
            failed_at = CASE WHEN {recovers} THEN NULL
                             WHEN NOT $4 AND documents.status_rank <= {failed} THEN GREATEST(documents.failed_at, $3)
                             ELSE documents.failed_at END,
            projected_steps = CASE WHEN $4 THEN documents.projected_steps | $5 ELSE documents.projected_steps END,
            failed_steps = CASE WHEN $4 THEN (documents.failed_steps & ~($5::smallint))
                                WHEN documents.status_rank <= {failed} THEN documents.failed_steps | $5
                                ELSE documents.failed_steps END,
            succeeded_at = CASE WHEN $4 THEN GREATEST(documents.succeeded_at, $3) ELSE documents.succeeded_at END,
            updated_at = GREATEST(documents.updated_at, $3)
         WHERE documents.workspace_id = EXCLUDED.workspace_id",
        own_status = status_of_rank(&own),
        reached_status = status_of_rank(&reached),
    ))
    .bind(id)
    .bind(workspace_id)
    .bind(at)
    .bind(success)
    .bind(bits)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A failed step: the status stops at `failed`, and the reason shown is the
/// latest failure's (by when it occurred, whatever order they land in).
pub(crate) async fn apply_failure(
    tx: &mut Transaction<'_, Postgres>,
    id: Uuid,
    workspace_id: &str,
    step: DocumentStatus,
    code: &str,
    reason: &str,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    apply_step(tx, id, workspace_id, StepOutcome::Failed { step }, at).await?;
    sqlx::query(
        "UPDATE documents SET failure_code = $2, failure_reason = $3
         WHERE id = $1 AND status = 'failed' AND (failed_at IS NULL OR failed_at <= $4)",
    )
    .bind(id)
    .bind(code)
    .bind(reason)
    .bind(at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Which revision of its document an event is about, against the newest
/// the document has seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RevisionRole {
    /// The newest revision (or a newer one, which this event starts): its
    /// steps are the status the document shows.
    Newest,
    /// An older revision, replayed or late: its rows are kept (answers cite
    /// it) but its steps say nothing about the status.
    Older,
}

/// Places an event of `revision` among its document's revisions. An event
/// of a newer revision than any seen starts that revision's run: the
/// status goes back to `uploaded` with no step projected and no failure,
/// whatever order the revision's own events land in (the revision search
/// reads is untouched until the new one is ingested). A deleted document
/// stays deleted.
pub(crate) async fn enter_revision(
    tx: &mut Transaction<'_, Postgres>,
    id: Uuid,
    workspace_id: &str,
    revision: i32,
) -> Result<RevisionRole, StoreError> {
    let latest: Option<i32> = sqlx::query_scalar(
        "UPDATE documents SET latest_revision = $3, status = 'uploaded', status_rank = $4, projected_steps = 0,
                failed_steps = 0, failure_code = NULL, failure_reason = NULL, failed_at = NULL
         WHERE id = $1 AND workspace_id = $2 AND latest_revision < $3 AND status <> 'deleted'
         RETURNING latest_revision",
    )
    .bind(id)
    .bind(workspace_id)
    .bind(revision)
    .bind(DocumentStatus::Uploaded.rank())
    .fetch_optional(&mut **tx)
    .await?;
    if latest.is_some() {
        return Ok(RevisionRole::Newest);
    }
    let latest: Option<i32> = sqlx::query_scalar("SELECT latest_revision FROM documents WHERE id = $1 AND workspace_id = $2")
        .bind(id)
        .bind(workspace_id)
        .fetch_optional(&mut **tx)
        .await?;
    Ok(match latest {
        Some(latest) if latest > revision => RevisionRole::Older,
        _ => RevisionRole::Newest,
    })
}

/// After a step of the newest revision created the document's row: it
/// records that revision as the newest seen.
pub(crate) async fn note_revision(
    tx: &mut Transaction<'_, Postgres>,
    id: Uuid,
    workspace_id: &str,
    revision: i32,
) -> Result<(), StoreError> {
    sqlx::query("UPDATE documents SET latest_revision = $3 WHERE id = $1 AND workspace_id = $2 AND latest_revision < $3")
        .bind(id)
        .bind(workspace_id)
        .bind(revision)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
