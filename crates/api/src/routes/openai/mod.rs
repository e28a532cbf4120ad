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

mod text;
mod wire;

use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use rag_events::ConversationTurn;
use rag_store::messages::{self, MessageRow, MessageStatus};
use serde_json::{json, Value};
use uuid::Uuid;

use self::text::{sources_list, with_markers, without_markers, ListedSource, StreamedText};
use self::wire::{ChatRequest, OpenAiError};
use super::conversations::ask;
use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::AppState;

/// How long a request waits for its answer before it fails with 504 (the
/// question stays asked: its answer shows on the page when it comes).
pub const ANSWER_WAIT: Duration = Duration::from_secs(300);
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
    let asked = ask(&state, &user, &ws, conversation, question, None, Vec::new(), history).await?;
    let link = Link { base: page_base(&headers), ws: ws.clone(), conversation };
    let reply =
        Reply { state: state.clone(), ws, model: request.model.clone(), message: asked.assistant_message, link, sources_in_content };
    if request.stream {
        Ok(reply.stream(deltas, request.include_usage(), slot).into_response())
    } else {
        let row = reply.wait().await?;
        Ok(Json(reply.completion(&row).await?).into_response())
    }
}

/// Where the page is, for citation links: the request's own host.
pub(crate) fn page_base(headers: &HeaderMap) -> String {
    let host = headers
        .get("x-forwarded-host")
        .or_else(|| headers.get(axum::http::header::HOST))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    let scheme = headers.get("x-forwarded-proto").and_then(|v| v.to_str().ok()).filter(|p| *p == "https").unwrap_or("http");
    format!("{scheme}://{host}")
}

struct Link {
    base: String,
    ws: String,
    conversation: Uuid,
}

impl Link {
    /// Opens the page on the conversation with the passage highlighted, in
    /// the revision of the document it quoted (the document may change).
    fn passage(&self, document: &str, start: u64, end: u64, revision: u64) -> String {
        format!("{}/#ws={}&c={}&doc={document}&span={start}-{end}&rev={revision}", self.base, self.ws, self.conversation)
    }
}

/// An answer being waited for, and how its citations link to the page.
pub(crate) struct Reply {
    state: AppState,
    ws: String,
    model: String,
    message: Uuid,
    link: Link,
    /// The reply's text ends with its sources ([`sources_list`]).
    sources_in_content: bool,
}

/// What a client reads of a stored answer: its text with markers.
fn final_text(row: &MessageRow) -> String {
    let answer = row.answer();
    if answer.sections.is_empty() {
        return row.content.clone();
    }
    let text = with_markers(answer.sections.iter().map(|s| (s.text.as_str(), s.citations.len(), true)));
    // The parts of a question the documents do not answer, said after the
    // answered ones (no section: a section always cites).
    match answer.retrieval.unanswered_text {
        Some(line) => format!("{text}\n\n{line}"),
        None => text,
    }
}

fn usage(row: &MessageRow) -> Value {
    let (prompt, completion, total) = row.answer().llm_usage.map_or((0, 0, 0), |u| (u.prompt_tokens, u.completion_tokens, u.total_tokens));
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total})
}

fn created(row: &MessageRow) -> i64 {
    row.created_at.timestamp()
}

/// The citations as the reply's text lists them.
fn listed(citations: &[Value]) -> Vec<ListedSource<'_>> {
    citations
        .iter()
        .map(|c| ListedSource {
            index: c["index"].as_u64().unwrap_or(0),
            name: c["filename"].as_str().or(c["document_id"].as_str()).unwrap_or_default(),
            place: match (c["page"].as_u64(), c["cell_range"].as_str()) {
                (_, Some(cells)) => Some(cells.to_string()),
                (Some(p), None) => Some(format!("p. {p}")),
                (None, None) => None,
            },
            quote: c["text"].as_str().unwrap_or_default(),
            url: c["url"].as_str().unwrap_or_default(),
        })
        .collect()
}

/// The sources of `row`'s answer as its text ends with them, headed in
/// the question's language.
fn sources_text(row: &MessageRow, citations: &[Value]) -> String {
    sources_list(&listed(citations), row.answer().retrieval.query_language.as_deref() == Some("vi"))
}

/// A finished answer with its numbered citations (the MCP `ask` tool).
pub(crate) struct Answered {
    row: MessageRow,
    citations: Vec<Value>,
    rag: Value,
}

impl Answered {
    /// The answer with `[n]` markers, then its sources, for a reader.
    pub fn text_with_sources(&self) -> String {
        final_text(&self.row) + &sources_text(&self.row, &self.citations)
    }

    /// The answer as structured content.
    pub fn structured(&self) -> Value {
        json!({"answer": final_text(&self.row), "citations": self.citations, "rag": self.rag})
    }
}

impl Reply {
    /// Asks `question` in a new conversation of `ws` and waits for the answer.
    pub(crate) async fn ask(state: &AppState, user: &AuthUser, ws: &str, question: &str, base: String) -> Result<Answered, OpenAiError> {
        let title = crate::question::title_from_question(question);
        let row =
            messages::create_conversation(state.pool(), Uuid::now_v7(), ws, Some(&title), &user.user_id).await.map_err(ApiError::from)?;
        let asked = ask(state, user, ws, row.id, question.to_string(), None, Vec::new(), Vec::new()).await?;
        let link = Link { base, ws: ws.to_string(), conversation: row.id };
        let reply = Reply {
            state: state.clone(),
            ws: ws.to_string(),
            model: ws.to_string(),
            message: asked.assistant_message,
            link,
            sources_in_content: true,
        };
        let row = reply.wait().await?;
        if let Some(e) = Self::failure(&row) {
            return Err(e);
        }
        let citations = reply.citations(&row).await?;
        let rag = reply.rag(&row);
        Ok(Answered { row, citations, rag })
    }

    async fn wait(&self) -> Result<MessageRow, OpenAiError> {
        let started = tokio::time::Instant::now();
        loop {
            if let Some(row) = messages::get(self.state.pool(), &self.ws, self.message).await.map_err(ApiError::from)? {
                if row.status != MessageStatus::Pending {
                    return Ok(row);
                }
            }
            if started.elapsed() >= ANSWER_WAIT {
                return Err(OpenAiError::new(
                    StatusCode::GATEWAY_TIMEOUT,
                    "server_error",
                    "answer_timeout",
                    format!("No answer within {} s; it will show in the conversation on the page when it comes.", ANSWER_WAIT.as_secs()),
                ));
            }
            tokio::time::sleep(self.state.config().sse_poll).await;
        }
    }

    /// A failed answer as an error (the model is unreachable and no
    /// fallback was allowed, for instance).
    fn failure(row: &MessageRow) -> Option<OpenAiError> {
        (row.status == MessageStatus::Failed).then(|| {
            let why = row.answer().failure.map_or_else(|| row.content.clone(), |f| f.message);
            OpenAiError::new(StatusCode::BAD_GATEWAY, "server_error", "answer_failed", format!("The answer failed: {why}"))
        })
    }

    /// The citations, numbered as the markers are, each with its
    /// document's name, page or cells, exact text and a link to it.
    async fn citations(&self, row: &MessageRow) -> Result<Vec<Value>, ApiError> {
        let mut documents: HashMap<String, Option<rag_store::documents::DocumentRow>> = HashMap::new();
        let mut out = Vec::new();
        for section in row.answer().sections {
            for c in section.citations {
                let doc = c.document_id.clone();
                if !documents.contains_key(&doc) {
                    let found = match Uuid::parse_str(&doc) {
                        Ok(id) => rag_store::documents::get(self.state.pool(), &self.ws, id).await?,
                        Err(_) => None,
                    };
                    documents.insert(doc.clone(), found);
                }
                let d = documents.get(&doc).and_then(Option::as_ref);
                let (start, end) = (c.char_start.max(0) as u64, c.char_end.max(0) as u64);
                let revision = c.revision.max(1) as u64;
                let mut v = json!({
                    "index": out.len() + 1,
                    "document_id": doc,
                    "filename": d.and_then(|d| d.filename.clone()),
                    "char_start": start,
                    "char_end": end,
                    "text": c.text,
                    "url": self.link.passage(&doc, start, end, revision),
                    "revision": revision,
                });
                if let Some(cells) = &c.cell_range {
                    v["cell_range"] = json!(cells);
                } else if d.is_some_and(has_pages) {
                    v["page"] = json!(c.page_idx.max(0) + 1);
                }
                out.push(v);
            }
        }
        Ok(out)
    }

    fn rag(&self, row: &MessageRow) -> Value {
        json!({"workspace_id": self.ws, "conversation_id": self.link.conversation, "message_id": row.id, "abstained": row.answer().abstained})
    }

    async fn completion(&self, row: &MessageRow) -> Result<Value, OpenAiError> {
        if let Some(e) = Self::failure(row) {
            return Err(e);
        }
        let citations = self.citations(row).await?;
        let mut content = final_text(row);
        if self.sources_in_content {
            content.push_str(&sources_text(row, &citations));
        }
        Ok(json!({
            "id": format!("chatcmpl-{}", self.message.simple()),
            "object": "chat.completion",
            "created": created(row),
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content, "citations": citations, "rag": self.rag(row)},
                "finish_reason": "stop",
            }],
            "usage": usage(row),
        }))
    }

    fn chunk(&self, created: i64, delta: Value, finish: Option<&str>) -> Event {
        let chunk = json!({
            "id": format!("chatcmpl-{}", self.message.simple()),
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
        mut deltas: tokio::sync::broadcast::Receiver<std::sync::Arc<messages::AnswerDelta>>,
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
            let started = tokio::time::Instant::now();
            let shutdown = self.state.0.shutdown.clone();
            let row = loop {
                match messages::get(self.state.pool(), &self.ws, self.message).await {
                    Ok(Some(row)) if row.status != MessageStatus::Pending => break Some(row),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, message_id = %self.message, "polling an answer for a chat stream"),
                }
                if started.elapsed() >= ANSWER_WAIT {
                    break None;
                }
                let poll = tokio::time::sleep(self.state.config().sse_poll);
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    // The client went away: stop following the answer (it
                    // still lands in the conversation on the page).
                    _ = tx.closed() => return,
                    _ = poll => {}
                    d = deltas.recv() => match d {
                        Ok(d) if d.workspace_id == self.ws && d.message_id == self.message && !d.sections.is_empty() => {
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
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => tokio::time::sleep(self.state.config().sse_poll).await,
                    },
                }
            };
            let last = match row {
                None => Err(OpenAiError::new(
                    StatusCode::GATEWAY_TIMEOUT,
                    "server_error",
                    "answer_timeout",
                    "No answer in time; it will show in the conversation on the page.",
                )),
                Some(row) => match Self::failure(&row) {
                    Some(e) => Err(e),
                    None => match self.citations(&row).await {
                        Ok(citations) => Ok((row, citations)),
                        Err(e) => Err(OpenAiError::from(e)),
                    },
                },
            };
            match last {
                Ok((row, citations)) => {
                    let mut piece = text.finish(&final_text(&row));
                    if self.sources_in_content {
                        piece.push_str(&sources_text(&row, &citations));
                    }
                    let delta = json!({"content": piece, "citations": citations, "rag": self.rag(&row)});
                    if tx.send(self.chunk(now, delta, Some("stop"))).await.is_err() {
                        return;
                    }
                    if include_usage {
                        let usage = json!({
                            "id": format!("chatcmpl-{}", self.message.simple()), "object": "chat.completion.chunk",
                            "created": now, "model": self.model, "choices": [], "usage": usage(&row),
                        });
                        if tx.send(Event::default().data(usage.to_string())).await.is_err() {
                            return;
                        }
                    }
                }
                Err(e) => {
                    if tx.send(Event::default().data(e.body().to_string())).await.is_err() {
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

/// Whether a document's citations name a page: formats that have pages
/// (PDF, pictures, presentations, documents of more than one page), not
/// text, Markdown, web pages or spreadsheets (whose cells are named).
fn has_pages(d: &rag_store::documents::DocumentRow) -> bool {
    let ct = d.content_type.as_deref().unwrap_or_default();
    ct == "application/pdf" || ct.starts_with("image/") || ct.contains("presentation") || d.page_count.unwrap_or(1) > 1
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
