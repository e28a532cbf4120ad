//! An answer being waited for, written as a chat completion: whole, or as
//! `chat.completion.chunk` events of only the words that are final.

use std::convert::Infallible;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use rag_asking::{AnswerWatch, Deltas, Watched};
use rag_store::messages;
use serde_json::{json, Value};
use uuid::Uuid;

use super::wire::OpenAiError;
use crate::answered::text::{with_markers, StreamedText};
use crate::answered::{self, Answered, Link, NoAnswer, ANSWER_WAIT};
use crate::AppState;

/// An answer being waited for, as a chat completion.
pub(super) struct Reply {
    pub state: AppState,
    pub ws: String,
    pub model: String,
    pub message: Uuid,
    pub link: Link,
    /// The reply's text ends with its sources.
    pub sources_in_content: bool,
}

impl OpenAiError {
    fn of(no: NoAnswer) -> OpenAiError {
        match no {
            NoAnswer::Api(e) => e.into(),
            NoAnswer::TimedOut => OpenAiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "server_error",
                "answer_timeout",
                format!("No answer within {} s; it will show in the conversation on the page when it comes.", ANSWER_WAIT.as_secs()),
            ),
            NoAnswer::Failed(why) => {
                OpenAiError::new(StatusCode::BAD_GATEWAY, "server_error", "answer_failed", format!("The answer failed: {why}"))
            }
        }
    }
}

impl Reply {
    fn id(&self) -> String {
        format!("chatcmpl-{}", self.message.simple())
    }

    /// The whole answer in one response.
    pub async fn completion(&self) -> Result<Value, OpenAiError> {
        let row = answered::wait(&self.state, &self.ws, self.message).await.map_err(OpenAiError::of)?;
        let a = Answered::read(&self.state, row, &self.link).await.map_err(OpenAiError::of)?;
        let mut content = a.text();
        if self.sources_in_content {
            content.push_str(&a.sources_text());
        }
        Ok(json!({
            "id": self.id(),
            "object": "chat.completion",
            "created": a.row.created_at.timestamp(),
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content, "citations": a.citations, "rag": a.place},
                "finish_reason": "stop",
            }],
            "usage": usage(&a),
        }))
    }

    fn chunk(&self, created: i64, delta: Value, finish: Option<&str>) -> Event {
        let chunk = json!({
            "id": self.id(),
            "object": "chat.completion.chunk",
            "created": created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        Event::default().data(chunk.to_string())
    }

    /// The answer as `chat.completion.chunk` events: the role at once, each
    /// part's words once the answerer has confirmed them (its check passed:
    /// a client cannot take words back, so no draft is ever sent), the
    /// rest of the final text with the citations (and the sources list) as
    /// the last piece, `[DONE]`.
    pub fn stream(
        self,
        deltas: tokio::sync::broadcast::Receiver<std::sync::Arc<messages::AnswerDelta>>,
        include_usage: bool,
        slot: Option<crate::limits::SlotGuard>,
    ) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
        let (tx, rx) = tokio::sync::mpsc::channel::<Event>(64);
        tokio::spawn(async move {
            let _slot = slot;
            let now = chrono::Utc::now().timestamp();
            if tx.send(self.chunk(now, json!({"role": "assistant", "content": ""}), None)).await.is_err() {
                return;
            }
            let mut text = StreamedText::default();
            let mut shown: Vec<messages::DeltaSection> = Vec::new();
            let mut watch = AnswerWatch::new(
                self.state.pool().clone(),
                &self.ws,
                self.message,
                Deltas::Broadcast(deltas),
                ANSWER_WAIT,
                self.state.config().sse_poll,
            );
            let shutdown = self.state.0.shutdown.clone();
            let row = loop {
                // The client went away: stop following the answer (it
                // still lands in the conversation on the page).
                let watched = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tx.closed() => return,
                    w = watch.next() => w,
                };
                match watched {
                    Ok(Watched::Answered(row)) => break Ok(*row),
                    Ok(Watched::TimedOut) => break Err(NoAnswer::TimedOut),
                    Ok(Watched::Delta(d)) if !d.sections.is_empty() => {
                        shown.truncate(d.from);
                        shown.extend(d.sections.iter().cloned());
                        // Only what is final, and only what cites: the
                        // answer's own abstention sentence comes with the
                        // final text.
                        let confirmed = shown.iter().take(d.confirmed).filter(|s| !s.citations.is_empty());
                        let so_far = with_markers(confirmed.map(|s| (s.text.as_str(), s.citations.len(), true)));
                        if let Some(piece) = text.advance(&so_far) {
                            if tx.send(self.chunk(now, json!({"content": piece}), None)).await.is_err() {
                                return;
                            }
                        }
                    }
                    Ok(Watched::Delta(_)) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, message_id = %self.message, "polling an answer for a chat stream");
                        // A poll's pause, still minding the client and the shutdown.
                        tokio::select! {
                            _ = shutdown.cancelled() => return,
                            _ = tx.closed() => return,
                            _ = tokio::time::sleep(self.state.config().sse_poll) => {}
                        }
                    }
                }
            };
            let last = match row {
                Ok(row) => Answered::read(&self.state, row, &self.link).await,
                Err(no) => Err(no),
            };
            match last {
                Ok(a) => {
                    let mut piece = text.finish(&a.text());
                    if self.sources_in_content {
                        piece.push_str(&a.sources_text());
                    }
                    let delta = json!({"content": piece, "citations": a.citations, "rag": a.place});
                    if tx.send(self.chunk(now, delta, Some("stop"))).await.is_err() {
                        return;
                    }
                    if include_usage {
                        let usage = json!({
                            "id": self.id(), "object": "chat.completion.chunk",
                            "created": now, "model": self.model, "choices": [], "usage": usage(&a),
                        });
                        if tx.send(Event::default().data(usage.to_string())).await.is_err() {
                            return;
                        }
                    }
                }
                Err(no) => {
                    if tx.send(Event::default().data(OpenAiError::of(no).body().to_string())).await.is_err() {
                        return;
                    }
                }
            }
            let _ = tx.send(Event::default().data("[DONE]")).await;
        });
        let events = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) });
        Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
    }
}

fn usage(a: &Answered) -> Value {
    let (prompt, completion, total) = a.usage();
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total})
}
