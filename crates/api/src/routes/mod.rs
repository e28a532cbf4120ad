pub mod conversations;
pub mod document_events;
pub mod documents;
pub mod events;
pub mod health;
pub mod keys;
pub mod openai;
pub mod page;
pub mod page_image;
pub mod reading;
pub mod sources;
pub mod workspaces;

use rag_store::workspaces::WorkspaceRow;

use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::AppState;

/// Workspace ids follow one rule everywhere ([`rag_events::is_workspace_id`]).
pub(crate) fn is_workspace_id(ws: &str) -> bool {
    rag_events::is_workspace_id(ws)
}

/// The workspace if the caller owns it; "not found" otherwise, whether it
/// is someone else's or does not exist.
pub(crate) async fn owned_workspace(state: &AppState, user: &AuthUser, ws: &str) -> Result<WorkspaceRow, ApiError> {
    if !is_workspace_id(ws) || !user.reaches(ws) {
        return Err(ApiError::not_found("workspace"));
    }
    rag_store::workspaces::get_owned(state.pool(), ws, &user.user_id).await?.ok_or_else(|| ApiError::not_found("workspace"))
}

/// The workspace `key` names among those the caller reaches: its id, else
/// the name of exactly one of them (case and surrounding spaces aside).
/// "Not found" as [`owned_workspace`] says it; several of that name are a
/// 400 `workspace_ambiguous` listing their ids.
pub(crate) async fn named_workspace(state: &AppState, user: &AuthUser, key: &str) -> Result<WorkspaceRow, ApiError> {
    // Only what the caller reaches is looked among: a workspace a key for
    // another one cannot reach never hides one it can.
    let reachable: Vec<WorkspaceRow> =
        rag_store::workspaces::list_owned(state.pool(), &user.user_id).await?.into_iter().filter(|w| user.reaches(&w.id)).collect();
    match rag_store::workspaces::Found::among(reachable, key.trim()) {
        rag_store::workspaces::Found::One(w) => Ok(w),
        rag_store::workspaces::Found::None => Err(ApiError::not_found("workspace")),
        rag_store::workspaces::Found::Many(v) => Err(ApiError::bad_request(
            "workspace_ambiguous",
            format!(
                "{} workspaces are named `{key}`: use an id ({})",
                v.len(),
                v.iter().map(|w| w.id.as_str()).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

/// `?limit=&cursor=` of every list: at most `limit` items (1-500, default
/// 100) after the `cursor` a previous page answered as `next_cursor`.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Items per page, 1-500 (default 100).
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

pub const DEFAULT_PAGE: u32 = 100;
pub const MAX_PAGE: u32 = 500;

impl PageQuery {
    pub fn limit(&self) -> Result<i64, ApiError> {
        match self.limit.unwrap_or(DEFAULT_PAGE) {
            n @ 1..=MAX_PAGE => Ok(i64::from(n)),
            n => Err(ApiError::bad_request("invalid_field", format!("limit must be 1-{MAX_PAGE} (is {n})"))),
        }
    }

    /// The cursor as `(time, id)`: `<microseconds>_<id>`.
    pub fn after<T: std::str::FromStr>(&self) -> Result<Option<(chrono::DateTime<chrono::Utc>, T)>, ApiError> {
        let Some(c) = self.cursor.as_deref().filter(|c| !c.is_empty()) else { return Ok(None) };
        let bad = || ApiError::bad_request("invalid_field", "cursor is not one this server gave");
        let (micros, id) = c.split_once('_').ok_or_else(bad)?;
        let at = micros.parse().ok().and_then(chrono::DateTime::from_timestamp_micros).ok_or_else(bad)?;
        Ok(Some((at, id.parse().map_err(|_| bad())?)))
    }
}

/// The cursor of the page after `rows`, if `rows` filled the page
/// (`rows` holds one more than the page to tell).
pub fn next_cursor<R, I: std::fmt::Display>(
    rows: &mut Vec<R>,
    limit: i64,
    key: impl Fn(&R) -> (chrono::DateTime<chrono::Utc>, I),
) -> Option<String> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if rows.len() <= limit {
        return None;
    }
    rows.truncate(limit);
    rows.last().map(|r| {
        let (at, id) = key(r);
        format!("{}_{id}", at.timestamp_micros())
    })
}

/// Text a client sends: bounded, and free of NUL (Postgres cannot store it)
/// and other control characters except newlines and tabs.
pub(crate) fn checked_text<'a>(field: &str, value: &'a str, min: usize, max: usize) -> Result<&'a str, ApiError> {
    let n = value.chars().count();
    if n < min || n > max {
        return Err(ApiError::bad_request("invalid_field", format!("{field} must have {min}-{max} characters (has {n})")));
    }
    if crate::question::has_control_characters(value) {
        return Err(ApiError::bad_request("invalid_field", format!("{field} contains control characters")));
    }
    Ok(value)
}

/// An event the API just recorded on the bus.
pub(crate) enum Recorded<'a> {
    Uploaded(&'a rag_events::DocumentUploaded),
    Deleted(&'a rag_events::DocumentDeleted),
    Asked(&'a rag_events::QuestionAsked),
}

/// True once a token expiring at `expires_at` (seconds since the epoch)
/// has expired: an event stream opened with it ends then.
pub(crate) fn token_expired(expires_at: u64) -> bool {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(u64::MAX);
    now >= expires_at
}

/// Applies an event the API just recorded to the read models, through the
/// projector's own idempotent functions, so the client's next read sees
/// it. Best effort: the projector applies the same event later, so a
/// failure here only delays visibility.
pub(crate) async fn apply_now(state: &AppState, event: Recorded<'_>) {
    let started = std::time::Instant::now();
    let (mut began, mut applied) = (started, started);
    let result = async {
        let mut tx = state.pool().begin().await?;
        began = std::time::Instant::now();
        match event {
            Recorded::Uploaded(e) => rag_store::documents::apply_uploaded(&mut tx, e).await?,
            Recorded::Deleted(e) => rag_store::documents::apply_deleted(&mut tx, e).await?,
            Recorded::Asked(e) => rag_store::messages::apply_question_asked(&mut tx, e).await?,
        }
        applied = std::time::Instant::now();
        tx.commit().await?;
        Ok::<(), rag_store::StoreError>(())
    }
    .await;
    if let Err(e) = result {
        tracing::warn!(error = %e, "applying the recorded event now failed; the projector will apply it");
    } else if started.elapsed() >= SLOW_APPLY {
        // Which step: a connection from the pool, the statements (a row
        // lock), or the commit (the disk).
        tracing::info!(
            begin_ms = (began - started).as_millis() as u64,
            apply_ms = (applied - began).as_millis() as u64,
            commit_ms = applied.elapsed().as_millis() as u64,
            "applying the recorded event now was slow"
        );
    }
}

/// Past this, [`apply_now`] says where its time went.
const SLOW_APPLY: std::time::Duration = std::time::Duration::from_millis(100);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_ids_and_text_checks() {
        assert!(is_workspace_id("0192f3a0-7c1e-7000-8000-000000000000"));
        assert!(is_workspace_id("demo_1.x"));
        assert!(!is_workspace_id(""));
        assert!(!is_workspace_id("../etc"));
        assert!(!is_workspace_id("a\0b"));
        assert!(!is_workspace_id(&"a".repeat(65)));
        assert!(checked_text("name", "Hồ sơ", 1, 10).is_ok());
        assert_eq!(checked_text("name", "", 1, 10).unwrap_err().code, "invalid_field");
        assert_eq!(checked_text("name", "a\0b", 1, 10).unwrap_err().code, "invalid_field");
        assert!(checked_text("content", "line\nnext\ttab", 1, 100).is_ok());
    }
}
