//! Retention of superseded revisions (`REVISION_RETENTION`, docs/sources.md):
//! the text of a revision search no longer reads is kept while any answer
//! cites it; the others' segments go some time after they were superseded,
//! and never while the workspace has a question waiting for its answer (an
//! answer being written, or not projected yet, may cite it). Their upload facts stay in `document_revisions`, and opening
//! one says it is no longer kept (410).

use std::time::Duration;

use sqlx::PgPool;

use crate::StoreError;

/// Drops the segments of revisions superseded more than `after` ago that
/// no assistant message of their workspace cites; how many rows went.
/// Idempotent, and the outcome depends only on the events projected (a
/// rebuild followed by it gives the same rows as the running system).
pub async fn prune_uncited(pool: &PgPool, after: Duration) -> Result<u64, StoreError> {
    let cutoff = chrono::Utc::now() - chrono::Duration::from_std(after).unwrap_or_else(|_| chrono::Duration::days(3650));
    Ok(sqlx::query(
        "DELETE FROM segments s USING document_revisions r
         WHERE r.document_id = s.document_id AND r.revision = s.revision AND r.workspace_id = s.workspace_id
           AND r.superseded_at IS NOT NULL AND r.superseded_at < $1
           -- An answer not projected yet may cite it: not while the
           -- workspace has a question waiting for its answer.
           AND NOT EXISTS (SELECT 1 FROM messages p WHERE p.workspace_id = s.workspace_id AND p.status = 'pending')
           AND NOT EXISTS (
               SELECT 1 FROM messages m, jsonb_array_elements(
                   CASE WHEN jsonb_typeof(m.metadata->'citations') = 'array' THEN m.metadata->'citations' ELSE '[]'::jsonb END) c
               WHERE m.workspace_id = s.workspace_id AND m.role = 'assistant'
                 AND c->>'document_id' = s.document_id::text
                 AND COALESCE((c->>'revision')::int, 1) = s.revision)",
    )
    .bind(cutoff)
    .execute(pool)
    .await?
    .rows_affected())
}
