//! The parser's attempts per input event, remembered before each attempt
//! (`migrations/…_parse_attempts.sql`): a crash of the parser cannot count
//! its own attempt away.

use sqlx::PgPool;

use crate::StoreError;

/// Counts one more attempt at `event_id` and returns how many there have
/// been, this one included.
pub async fn begin(pool: &PgPool, event_id: &str) -> Result<i32, StoreError> {
    let attempts: i32 = sqlx::query_scalar(
        "INSERT INTO parse_attempts (event_id, attempts) VALUES ($1, 1) \
         ON CONFLICT (event_id) DO UPDATE SET attempts = parse_attempts.attempts + 1, updated_at = now() \
         RETURNING attempts",
    )
    .bind(event_id)
    .fetch_one(pool)
    .await?;
    Ok(attempts)
}

/// Takes back the attempt just begun: it was interrupted by a shutdown,
/// not ended by the document.
pub async fn interrupted(pool: &PgPool, event_id: &str) -> Result<(), StoreError> {
    sqlx::query("UPDATE parse_attempts SET attempts = attempts - 1, updated_at = now() WHERE event_id = $1 AND attempts > 0")
        .bind(event_id)
        .execute(pool)
        .await?;
    Ok(())
}

/// The event has its outcome (parsed, refused or dead-lettered): forget it.
pub async fn finished(pool: &PgPool, event_id: &str) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM parse_attempts WHERE event_id = $1").bind(event_id).execute(pool).await?;
    Ok(())
}
