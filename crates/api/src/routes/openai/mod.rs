//! OpenAI-compatible chat: `GET /v1/models` and `POST /v1/chat/completions`,
//! so chat front-ends and SDKs that speak OpenAI's API (Open WebUI,
//! LibreChat, the `openai` packages, LangChain, LlamaIndex) ask a
//! workspace. A model is a workspace (its id, or its name as an alias).
//! Each request is an ordinary question: QuestionAsked on the log, its
//! AnswerProduced, and the conversation on the page. The last user message
//! is the question and the earlier turns its history; when those turns are
//! a conversation this API answered, the question joins it. The answer's
//! text carries `[n]` markers and ends with its sources as a Markdown list
//! (chat front-ends show `content` and nothing else; off per request or
//! per key), and the message a `citations` array (on the last chunk when
//! streaming). A stream sends only text that is final: a part of the
//! answer once its check has passed, never a draft that could be taken
//! back. Errors come in OpenAI's shape.

mod wire;

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use rag_asking::{AnswerWatch, Ask, Deltas, Watched};
use rag_events::ConversationTurn;
use rag_store::messages::{self, MessageStatus};
use serde_json::{json, Value};
use uuid::Uuid;

use self::wire::{ChatRequest, OpenAiError};
use super::conversations::{record, PRODUCER};
use crate::answered::text::{with_markers, without_markers, StreamedText};
use crate::answered::{self, page_base, Answered, Link, NoAnswer, ANSWER_WAIT};
use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::AppState;

/// Turns one request may send; more are refused (a client sending a whole
/// long chat keeps only what the answerer reads anyway).
pub const MAX_MESSAGES: usize = 200;
/// Characters of all the messages together.
pub const MAX_TOTAL_CHARS: usize = 200_000;
/// Largest request body: a client sends the whole conversation each time,
/// so more than the API's other JSON bodies (`API_JSON_BODY_MAX_BYTES`).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Earlier turns carried in the event when a conversation starts here,
/// and the characters kept of each: more than the answerer reads (its last
/// six turns, 1,500 characters each), and an event stays far below the
/// broker's message size whatever a client sends.
const HISTORY_KEPT: usize = 12;
const TURN_CHARS_KEPT: usize = 4000;

/// The last turns of a client's history, as the event carries them.
fn recent(mut history: Vec<ConversationTurn>) -> Vec<ConversationTurn> {
    let from = history.len().saturating_sub(HISTORY_KEPT);
    history.drain(..from);
    for t in &mut history {
        if t.content.chars().count() > TURN_CHARS_KEPT {
            t.content = t.content.chars().take(TURN_CHARS_KEPT).collect();
        }
    }
    history
}

/// Earlier answers checked for the conversation a client continues.
const CANDIDATE_CONVERSATIONS: i64 = 5;

/// The workspaces the caller may ask, as models.
pub async fn models(State(state): State<AppState>, user: Result<AuthUser, ApiError>) -> Result<Json<Value>, OpenAiError> {
    let user = user?;
    let rows: Vec<_> = rag_store::workspaces::list_owned(state.pool(), &user.user_id)
        .await
        .map_err(ApiError::from)?
        .into_iter()
        .filter(|w| user.reaches(&w.id))
        .collect();
    // A model picker shows ids: a workspace's name is its id here when no
    // other workspace the key reaches has that name, nor has it as its id
    // (an id wins when a model is looked up). Its id stays accepted, and
    // is the one to keep: a name changes with a rename.
    let data: Vec<Value> = rows
        .iter()
        .map(|w| {
            let unique = rows.iter().filter(|o| rag_store::workspaces::same_name(&o.name, &w.name)).count() == 1
                && !rows.iter().any(|o| o.id == w.name.trim());
            let id = if unique && !w.name.trim().is_empty() { w.name.trim() } else { w.id.as_str() };
            json!({"id": id, "object": "model", "created": w.created_at.timestamp(), "owned_by": "rag-engine",
                   "name": w.name, "workspace_id": w.id})
        })
        .collect();
    Ok(Json(json!({"object": "list", "data": data})))
}

/// The workspace `model` names: its id, else the name of exactly one of
/// the workspaces the caller reaches. Another user's is "not found", as
/// everywhere.
async fn workspace_of(state: &AppState, user: &AuthUser, model: &str) -> Result<String, OpenAiError> {
    match super::named_workspace(state, user, model).await {
        Ok(w) => Ok(w.id),
        Err(e) if e.status == StatusCode::NOT_FOUND => Err(OpenAiError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "model_not_found",
            format!("The model `{model}` does not exist or you do not have access to it."),
        )),
        Err(e) if e.code == "workspace_ambiguous" => {
            Err(OpenAiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", "model_ambiguous", e.message))
        }
        Err(e) => Err(e.into()),
    }
}

/// The conversation a client's earlier turns continue: one of the
/// caller's in this workspace whose messages are exactly those turns.
async fn continued_conversation(state: &AppState, user: &AuthUser, ws: &str, turns: &[ConversationTurn]) -> Result<Option<Uuid>, ApiError> {
    let Some(last) = turns.last().filter(|t| t.role == "assistant") else { return Ok(None) };
    let content = without_markers(&last.content);
    for id in messages::conversations_with_answer(state.pool(), ws, &user.user_id, &content, CANDIDATE_CONVERSATIONS).await? {
        let stored = messages::list(state.pool(), ws, id).await?;
        let same = stored.len() == turns.len()
            && stored
                .iter()
                .zip(turns)
                .all(|(m, t)| m.status == MessageStatus::Done && m.role == t.role && m.content.trim() == without_markers(&t.content));
        if same {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

pub async fn chat_completions(
    State(state): State<AppState>,
    user: Result<AuthUser, ApiError>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, OpenAiError> {
    let user = user?;
    let body = body.map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => OpenAiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            "payload_too_large",
            format!("The request body is larger than {MAX_BODY_BYTES} bytes; send fewer or shorter messages."),
        ),
        status => OpenAiError::new(status, "invalid_request_error", "invalid_body", e.body_text()),
    })?;
    let request: ChatRequest = serde_json::from_slice(&body).map_err(|e| {
        OpenAiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "invalid_json",
            format!("The request body is not a valid chat request: {e}"),
        )
    })?;
    let (question, history) = request.question_and_history()?;
    let ws = workspace_of(&state, &user, &request.model).await?;
    // The request's choice, else the key's, else on.
    let sources_in_content = match (request.sources_in_content, user.key_id) {
        (Some(on), _) => on,
        (None, Some(key)) => rag_store::api_keys::sources_in_content(state.pool(), key).await.map_err(ApiError::from)?,
        (None, None) => true,
    };
    // Each question can cost an LLM call; a stream holds one of the user's slots.
    state.limits().question(&user.user_id).map_err(ApiError::from)?;
    let slot = if request.stream { Some(state.limits().stream(&user.user_id).map_err(ApiError::from)?) } else { None };
    let (conversation, history) = match continued_conversation(&state, &user, &ws, &history).await? {
        Some(id) => (id, Vec::new()),
        None => {
            let title = crate::question::title_from_question(history.first().map_or(question.as_str(), |t| t.content.as_str()));
            let row = messages::create_conversation(state.pool(), Uuid::now_v7(), &ws, Some(&title), &user.user_id)
                .await
                .map_err(ApiError::from)?;
            (row.id, recent(history))
        }
    };
    // Listen before asking: no delta of this answer is missed.
    let deltas = state.answer_deltas();
    let mut ask = Ask::new(&ws, conversation, question, &user.user_id, PRODUCER);
    ask.history = history;
    let asked = record(&state, ask).await?;
    let link = Link { base: page_base(&headers), ws: ws.clone(), conversation };
    let reply =
        Reply { state: state.clone(), ws, model: request.model.clone(), message: asked.assistant_message, link, sources_in_content };
    if request.stream {
        Ok(reply.stream(deltas, request.include_usage(), slot).into_response())
    } else {
        Ok(Json(reply.completion().await?).into_response())
    }
}

/// An answer being waited for, as a chat completion.
struct Reply {
    state: AppState,
    ws: String,
    model: String,
    message: Uuid,
    link: Link,
    /// The reply's text ends with its sources.
    sources_in_content: bool,
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
    async fn completion(&self) -> Result<Value, OpenAiError> {
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
    fn stream(
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
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    // The client went away: stop following the answer (it
                    // still lands in the conversation on the page).
                    _ = tx.closed() => return,
                    w = watch.next() => match w {
                        Ok(Watched::Answered(row)) => break Ok(*row),
                        Ok(Watched::TimedOut) => break Err(NoAnswer::TimedOut),
                        Ok(Watched::Delta(d)) if !d.sections.is_empty() => {
                            shown.truncate(d.from);
                            shown.extend(d.sections.iter().cloned());
                            // Only what is final, and only what cites: the
                            // answer's own abstention sentence comes with
                            // the final text.
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
                            tokio::time::sleep(self.state.config().sse_poll).await;
                        }
                    },
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_carries_the_last_turns_bounded() {
        let turns: Vec<ConversationTurn> = (0..30)
            .map(|i| ConversationTurn {
                role: if i % 2 == 0 { "user" } else { "assistant" }.into(),
                content: format!("{i} {}", "x".repeat(i * 300)),
            })
            .collect();
        let kept = recent(turns);
        assert_eq!(kept.len(), HISTORY_KEPT);
        assert!(kept[0].content.starts_with("18 "), "{}", &kept[0].content[..5]);
        assert!(kept.iter().all(|t| t.content.chars().count() <= TURN_CHARS_KEPT));
    }
}
