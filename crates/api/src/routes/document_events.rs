//! Server-Sent Events of a workspace's documents: `document.status_updated`
//! with the document whenever its status changes (uploaded → parsed →
//! chunked → ingested, or failed with its reason, or deleted), so a page
//! shows the pipeline without polling.
//!
//! Each event's id is a horizon: a Postgres transaction id below which every
//! transaction had ended when it was read (`documents::status_changes_since`).
//! A client reconnecting with `Last-Event-ID` gets every document changed at
//! or above it, so nothing is missed (a change may come twice). A client
//! connecting without it first gets a `ready` event whose id is the horizon
//! now: reading the document list after it, then applying the stream, misses
//! nothing either.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use rag_store::documents::{self, DocumentRow};
use uuid::Uuid;

use super::owned_workspace;
use crate::auth::AuthUser;
use crate::error::{ApiError, ErrorBody};
use crate::model::Document;
use crate::AppState;

pub const EVENT_NAME: &str = "document.status_updated";
pub const READY_EVENT_NAME: &str = "ready";

struct Feed {
    state: AppState,
    ws: String,
    /// Where the next read starts; None until the first read, which only
    /// takes the horizon and says so in a `ready` event.
    horizon: Option<i64>,
    /// Rows read and not sent yet, each with the event id it goes out
    /// under: the horizon its read started from, and for the last row of a
    /// read the horizon that read ended at (every change below it was in
    /// the read).
    ready: VecDeque<(DocumentRow, i64)>,
    /// What was last sent of each document (status, update time): a row
    /// read again while its writer's transaction was open elsewhere is not
    /// sent twice.
    sent: HashMap<Uuid, (String, chrono::DateTime<chrono::Utc>)>,
    expires_at: u64,
    _slot: crate::limits::SlotGuard,
}

/// Live status of the workspace's documents (text/event-stream).
#[utoipa::path(get, path = "/v1/workspaces/{ws}/documents/events", tag = "documents",
    params(("ws" = String, Path, description = "Workspace id"),
           ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event id")),
    responses((status = 200, description = "`ready` (without Last-Event-ID), then `document.status_updated` events whose data is a Document", content_type = "text/event-stream", body = String),
              (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 429, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn stream(
    State(state): State<AppState>,
    user: AuthUser,
    Path(ws): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    owned_workspace(&state, &user, &ws).await?;
    let slot = state.limits().stream(&user.user_id)?;
    let horizon = match headers.get("last-event-id").and_then(|v| v.to_str().ok()) {
        None => None,
        Some(v) => Some(
            v.trim()
                .parse::<i64>()
                .ok()
                .filter(|h| *h >= 0)
                .ok_or_else(|| ApiError::bad_request("invalid_last_event_id", "Last-Event-ID is not an event id of this stream"))?,
        ),
    };
    tracing::debug!(workspace_id = %ws, resume = horizon.is_some(), "document event stream opened");
    let feed = Feed { state, ws, horizon, ready: VecDeque::new(), sent: HashMap::new(), expires_at: user.expires_at, _slot: slot };
    let events = futures::stream::unfold(feed, next_event);
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

async fn next_event(mut feed: Feed) -> Option<(Result<Event, Infallible>, Feed)> {
    let shutdown = feed.state.0.shutdown.clone();
    loop {
        if super::token_expired(feed.expires_at) {
            return None;
        }
        if let Some((row, id)) = feed.ready.pop_front() {
            let seen = (row.status.as_str().to_string(), row.updated_at);
            if feed.sent.get(&row.id) == Some(&seen) {
                continue;
            }
            feed.sent.insert(row.id, seen);
            match Event::default().event(EVENT_NAME).id(id.to_string()).json_data(Document::from(row)) {
                Ok(e) => return Some((Ok(e), feed)),
                Err(e) => {
                    tracing::error!(error = %e, "serialising a document event");
                    continue;
                }
            }
        }
        match documents::status_changes_since(feed.state.pool(), &feed.ws, feed.horizon).await {
            Ok(changes) => match feed.horizon.replace(changes.horizon) {
                None => {
                    let ready = Event::default().event(READY_EVENT_NAME).id(changes.horizon.to_string()).data("{}");
                    return Some((Ok(ready), feed));
                }
                Some(since) => {
                    let last = changes.documents.len().saturating_sub(1);
                    feed.ready.extend(
                        changes.documents.into_iter().enumerate().map(|(i, row)| (row, if i == last { changes.horizon } else { since })),
                    );
                    if !feed.ready.is_empty() {
                        continue;
                    }
                }
            },
            // The stream stays open through a database hiccup; the next poll retries.
            Err(e) => tracing::warn!(error = %e, workspace_id = %feed.ws, "polling document changes"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return None,
            _ = tokio::time::sleep(feed.state.config().sse_poll) => {}
        }
    }
}
