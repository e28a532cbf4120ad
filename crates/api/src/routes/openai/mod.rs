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

mod catalog;
mod reply;
mod turns;
mod wire;

pub use self::catalog::models;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use rag_asking::Ask;
use rag_store::messages;
use uuid::Uuid;

use self::catalog::workspace_of;
use self::reply::Reply;
use self::turns::{continued_conversation, recent};
use self::wire::{ChatRequest, OpenAiError};
use super::conversations::{record, PRODUCER};
use crate::answered::{page_base, Link};
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
        // The client's turns are the conversation's, each one checked; the
        // event carries them as stored (without the [n] markers and the
        // sources list a client sends back), as the page's follow-ups do.
        Some(id) => (id, rag_asking::continued_turns(state.pool(), &ws, id).await.map_err(ApiError::from)?),
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
