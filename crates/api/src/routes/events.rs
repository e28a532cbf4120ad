//! Server-Sent Events of a conversation: `message.status_updated` with the
//! full message whenever an assistant message leaves `pending`. Each event's
//! id is a cursor (`<updated_at µs>_<message id>`); a client reconnecting
//! with `Last-Event-ID` receives exactly the updates after it, and one
//! connecting without it first receives every update so far, so an answer
//! that arrived before the stream opened is not missed.
//!
//! While an answer is written, `message.delta` events (no id: they are not
//! part of the resumable record) carry its text so far
//! (`{message_id, seq, from, sections: [{text, closed, citations}]}`: a
//! section's citations come as it closes; before the first words, one
//! with no sections and `sources: [{document_id, filename, pages}]`, the
//! documents the model is reading); the answer
//! itself always comes as `message.status_updated`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use chrono::{DateTime, Utc};
use futures::Stream;
use rag_store::messages::{self, MessageRow};
use uuid::Uuid;

use super::conversations::owned_conversation;
use crate::auth::AuthUser;
use crate::error::{ApiError, ErrorBody};
use crate::model::Message;
use crate::AppState;

pub const EVENT_NAME: &str = "message.status_updated";
pub const DELTA_EVENT_NAME: &str = "message.delta";

type Cursor = (DateTime<Utc>, Uuid);

pub fn cursor_id(c: &Cursor) -> String {
    format!("{}_{}", c.0.timestamp_micros(), c.1)
}

/// The earliest time Postgres's timestamptz holds (4713 BC), in
/// microseconds since the Unix epoch (its MIN_TIMESTAMP, counted from
/// 2000-01-01). Its latest lies beyond chrono's.
const POSTGRES_MIN_MICROS: i64 = -211_813_488_000_000_000 + 946_684_800_000_000;

/// A cursor this stream gave: its time must be one Postgres can compare
/// with, else the poll would fail for as long as the stream lives.
pub fn parse_cursor(s: &str) -> Option<Cursor> {
    let (micros, id) = s.trim().split_once('_')?;
    let micros: i64 = micros.parse().ok()?;
    if micros < POSTGRES_MIN_MICROS {
        return None;
    }
    Some((DateTime::from_timestamp_micros(micros)?, Uuid::parse_str(id).ok()?))
}

struct Feed {
    state: AppState,
    ws: String,
    conversation: Uuid,
    cursor: Option<Cursor>,
    ready: VecDeque<MessageRow>,
    /// The stream ends when the token that opened it expires: a client
    /// reconnects with a fresh one, and a revoked user's stream does not
    /// outlive their last token.
    expires_at: u64,
    /// One of the user's concurrent streams, released when the stream ends.
    _slot: crate::limits::SlotGuard,
    deltas: tokio::sync::broadcast::Receiver<std::sync::Arc<messages::AnswerDelta>>,
    /// When the read model is polled next (deltas wake the stream between polls).
    next_poll: tokio::time::Instant,
}

/// Live updates of the conversation's messages (text/event-stream).
#[utoipa::path(get, path = "/v1/workspaces/{ws}/conversations/{id}/events", tag = "conversations",
    params(("ws" = String, Path, description = "Workspace id"), ("id" = Uuid, Path, description = "Conversation id"),
           ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event id")),
    responses((status = 200, description = "`message.status_updated` events whose data is a Message", content_type = "text/event-stream", body = String),
              (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 429, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn stream(
    State(state): State<AppState>,
    user: AuthUser,
    Path((ws, id)): Path<(String, Uuid)>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    owned_conversation(&state, &user, &ws, id).await?;
    let slot = state.limits().stream(&user.user_id)?;
    let cursor = match headers.get("last-event-id") {
        None => None,
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(parse_cursor)
                .ok_or_else(|| ApiError::bad_request("invalid_last_event_id", "Last-Event-ID is not an event id of this stream"))?,
        ),
    };
    tracing::debug!(workspace_id = %ws, conversation_id = %id, resume = cursor.is_some(), "event stream opened");
    let deltas = state.answer_deltas();
    let feed = Feed {
        state,
        ws,
        conversation: id,
        cursor,
        ready: VecDeque::new(),
        expires_at: user.expires_at,
        _slot: slot,
        deltas,
        next_poll: tokio::time::Instant::now(),
    };
    let events = futures::stream::unfold(feed, next_event);
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

async fn next_event(mut feed: Feed) -> Option<(Result<Event, Infallible>, Feed)> {
    let shutdown = feed.state.0.shutdown.clone();
    loop {
        if super::token_expired(feed.expires_at) {
            tracing::debug!(conversation_id = %feed.conversation, "event stream closed: its token expired");
            return None;
        }
        if let Some(row) = feed.ready.pop_front() {
            let cursor = (row.updated_at, row.id);
            feed.cursor = Some(cursor);
            let event = Event::default().event(EVENT_NAME).id(cursor_id(&cursor));
            let event = match event.json_data(Message::from(row)) {
                Ok(e) => e,
                Err(e) => {
                    tracing::error!(error = %e, "serialising a message event");
                    continue;
                }
            };
            return Some((Ok(event), feed));
        }
        if tokio::time::Instant::now() >= feed.next_poll {
            feed.next_poll = tokio::time::Instant::now() + feed.state.config().sse_poll;
            match messages::status_updates_after(feed.state.pool(), &feed.ws, feed.conversation, feed.cursor, 100).await {
                Ok(rows) if !rows.is_empty() => {
                    feed.ready.extend(rows);
                    continue;
                }
                Ok(_) => {}
                // The stream stays open through a database hiccup; the next poll retries.
                Err(e) => {
                    tracing::warn!(error = %e, conversation_id = %feed.conversation, "polling message updates")
                }
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return None,
            _ = tokio::time::sleep_until(feed.next_poll) => {}
            delta = feed.deltas.recv() => match delta {
                // An answer of this conversation is projected: read it now.
                Ok(d) if d.projected && d.workspace_id == feed.ws && d.conversation_id == feed.conversation => {
                    feed.next_poll = tokio::time::Instant::now();
                }
                Ok(d) if d.workspace_id == feed.ws && d.conversation_id == feed.conversation => {
                    let mut data = serde_json::json!({"message_id": d.message_id, "seq": d.seq, "from": d.from, "sections": d.sections});
                    if !d.sources.is_empty() {
                        data["sources"] = serde_json::to_value(&d.sources).unwrap_or_default();
                    }
                    if d.restart {
                        data["restart"] = true.into();
                    }
                    return Some((Ok(Event::default().event(DELTA_EVENT_NAME).data(data.to_string())), feed));
                }
                Ok(_) => {}
                // Fell behind: the next delta holds the whole text anyway.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                // The hub is gone (shutdown): polling alone still ends the answer.
                Err(tokio::sync::broadcast::error::RecvError::Closed) => tokio::time::sleep_until(feed.next_poll).await,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip() {
        let c = (DateTime::from_timestamp_micros(1_763_800_000_123_456).unwrap(), Uuid::now_v7());
        assert_eq!(parse_cursor(&cursor_id(&c)), Some(c));
        assert_eq!(parse_cursor("garbage"), None);
        assert_eq!(parse_cursor("12_not-a-uuid"), None);
        // Beyond what Postgres's timestamptz holds: refused, not polled forever.
        assert_eq!(parse_cursor(&format!("{}_{}", i64::MAX, Uuid::now_v7())), None);
        assert_eq!(parse_cursor(&format!("{}_{}", -300_000_000_000_000_000i64, Uuid::now_v7())), None);
    }
}
