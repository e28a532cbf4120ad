//! Conversations and messages. Posting a question records QuestionAsked and
//! answers at once with the user message and the pending assistant message;
//! the answerer completes it (see `events` for the live update).

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use rag_asking::{Ask, Asked};
use rag_store::messages::{self, MessageStatus};
use uuid::Uuid;

use super::{apply_now, checked_text, next_cursor, owned_workspace, PageQuery, Recorded};
use crate::auth::AuthUser;
use crate::error::{ApiError, ErrorBody};
use crate::model::{Conversation, ConversationList, ConversationWithMessages, CreateConversation, Message, MessagesAccepted, PostMessage};
use crate::AppState;

pub(crate) const PRODUCER: &str = concat!("rag-engine/api@", env!("CARGO_PKG_VERSION"));

pub(crate) async fn owned_conversation(
    state: &AppState,
    user: &AuthUser,
    ws: &str,
    id: Uuid,
) -> Result<messages::ConversationRow, ApiError> {
    owned_workspace(state, user, ws).await?;
    messages::get_conversation(state.pool(), ws, id).await?.ok_or_else(|| ApiError::not_found("conversation"))
}

/// Start a conversation.
#[utoipa::path(post, path = "/v1/workspaces/{ws}/conversations", tag = "conversations",
    params(("ws" = String, Path, description = "Workspace id")),
    request_body = CreateConversation,
    responses((status = 201, body = Conversation), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Path(ws): Path<String>,
    Json(body): Json<CreateConversation>,
) -> Result<(StatusCode, Json<Conversation>), ApiError> {
    owned_workspace(&state, &user, &ws).await?;
    let title = match body.title.as_deref().map(str::trim) {
        Some(t) if !t.is_empty() => Some(checked_text("title", t, 1, crate::question::MAX_TITLE_CHARS)?),
        _ => None,
    };
    let row = messages::create_conversation(state.pool(), Uuid::now_v7(), &ws, title, &user.user_id).await?;
    Ok((StatusCode::CREATED, Json(row.into())))
}

/// Conversations of the workspace, newest first.
#[utoipa::path(get, path = "/v1/workspaces/{ws}/conversations", tag = "conversations",
    params(("ws" = String, Path, description = "Workspace id"), PageQuery),
    responses((status = 200, body = ConversationList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Path(ws): Path<String>,
    Query(page): Query<PageQuery>,
) -> Result<Json<ConversationList>, ApiError> {
    owned_workspace(&state, &user, &ws).await?;
    let limit = page.limit()?;
    let mut rows = messages::page_conversations(state.pool(), &ws, page.after()?, limit + 1).await?;
    let next_cursor = next_cursor(&mut rows, limit, |r| (r.created_at, r.id));
    Ok(Json(ConversationList { conversations: rows.into_iter().map(Into::into).collect(), next_cursor }))
}

/// A conversation with its messages, oldest first.
#[utoipa::path(get, path = "/v1/workspaces/{ws}/conversations/{id}", tag = "conversations",
    params(("ws" = String, Path, description = "Workspace id"), ("id" = Uuid, Path, description = "Conversation id")),
    responses((status = 200, body = ConversationWithMessages), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get(
    State(state): State<AppState>,
    user: AuthUser,
    Path((ws, id)): Path<(String, Uuid)>,
) -> Result<Json<ConversationWithMessages>, ApiError> {
    let c = owned_conversation(&state, &user, &ws, id).await?;
    let rows = messages::list(state.pool(), &ws, id).await?;
    Ok(Json(ConversationWithMessages {
        id: c.id,
        workspace_id: c.workspace_id,
        title: c.title,
        created_by: c.created_by,
        created_at: c.created_at,
        messages: rows.into_iter().map(Into::into).collect(),
    }))
}

/// Ask a question (QuestionAsked). Answers 202 with the user message and the
/// pending assistant message; follow the answer on the conversation's
/// event stream or by polling the message.
#[utoipa::path(post, path = "/v1/workspaces/{ws}/conversations/{id}/messages", tag = "conversations",
    params(("ws" = String, Path, description = "Workspace id"), ("id" = Uuid, Path, description = "Conversation id")),
    request_body = PostMessage,
    responses((status = 202, body = MessagesAccepted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn post_message(
    State(state): State<AppState>,
    user: AuthUser,
    Path((ws, id)): Path<(String, Uuid)>,
    Json(body): Json<PostMessage>,
) -> Result<(StatusCode, Json<MessagesAccepted>), ApiError> {
    owned_conversation(&state, &user, &ws, id).await?;
    // Each question can cost an LLM call.
    state.limits().question(&user.user_id)?;
    let question = crate::question::checked_question(&body.content)
        .map_err(|refusal| ApiError::bad_request("invalid_field", format!("content {refusal}")))?
        .to_string();
    let top_k = crate::question::checked_scope(body.top_k.map(i64::from), body.document_ids.len())
        .map_err(|refusal| ApiError::bad_request("invalid_field", refusal.to_string()))?;
    let mut question = Ask::new(&ws, id, question, &user.user_id, PRODUCER);
    question.top_k = top_k;
    question.document_ids = body.document_ids.iter().map(Uuid::to_string).collect();
    question.history = rag_asking::continued_turns(state.pool(), &ws, id).await?;
    let asked = record(&state, question).await?;
    let (event, user_message, assistant_message) = (asked.event, asked.user_message, asked.assistant_message);
    // Read back what the read model holds; if the database is unreachable
    // right now, answer from the event itself: the question is recorded
    // either way, and a client retrying on an error would ask it twice.
    let stored = async {
        Ok::<_, rag_store::StoreError>((
            messages::get(state.pool(), &ws, user_message).await?,
            messages::get(state.pool(), &ws, assistant_message).await?,
        ))
    }
    .await;
    let (user_row, assistant_row) = match stored {
        Ok((Some(u), Some(a))) => (u.into(), a.into()),
        _ => {
            let at = chrono::DateTime::from_timestamp_millis(event.envelope.occurred_at).unwrap_or_else(chrono::Utc::now);
            let message = |message_id: Uuid, role: &str, content: &str, status: MessageStatus| Message {
                id: message_id,
                conversation_id: id,
                workspace_id: ws.clone(),
                role: role.into(),
                content: content.into(),
                status,
                abstained: false,
                metadata: serde_json::json!({}),
                created_at: at,
                updated_at: at,
            };
            (
                message(user_message, "user", &event.question, MessageStatus::Done),
                message(assistant_message, "assistant", "", MessageStatus::Pending),
            )
        }
    };
    Ok((StatusCode::ACCEPTED, Json(MessagesAccepted { user_message: user_row, assistant_message: assistant_row })))
}

/// Records a question (its conversation's ownership checked by the caller)
/// and applies it to the read model at once: every door of the API asks
/// through here.
pub(crate) async fn record(state: &AppState, question: Ask<'_>) -> Result<Asked, ApiError> {
    let asked = question.asked();
    let e = &asked.event;
    state.producer().send(e).await?;
    tracing::info!(workspace_id = %e.envelope.workspace_id, conversation_id = %e.conversation_id, event_id = %e.envelope.event_id,
                   message_id = %asked.assistant_message, "question asked");
    apply_now(state, Recorded::Asked(e)).await;
    Ok(asked)
}

/// A message with its status, content and metadata (sections, citations, llm_usage).
#[utoipa::path(get, path = "/v1/workspaces/{ws}/conversations/{id}/messages/{message}", tag = "conversations",
    params(("ws" = String, Path, description = "Workspace id"), ("id" = Uuid, Path, description = "Conversation id"),
           ("message" = Uuid, Path, description = "Message id")),
    responses((status = 200, body = Message), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_message(
    State(state): State<AppState>,
    user: AuthUser,
    Path((ws, id, message)): Path<(String, Uuid, Uuid)>,
) -> Result<Json<Message>, ApiError> {
    owned_conversation(&state, &user, &ws, id).await?;
    match messages::get(state.pool(), &ws, message).await? {
        Some(m) if m.conversation_id == id => Ok(Json(m.into())),
        _ => Err(ApiError::not_found("message")),
    }
}
