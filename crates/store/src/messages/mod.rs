//! Conversations and messages. QuestionAsked creates the conversation (if
//! new), the user message and a pending assistant message; AnswerProduced
//! completes the assistant message. Both are idempotent, so a re-delivered
//! event changes nothing.

use chrono::{DateTime, Utc};
use rag_events::{AnswerProduced, QuestionAsked};
use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

use crate::StoreError;

mod answer;
mod deltas;
pub use answer::{AnswerDiagnostics, AnswerMetadata, HeldBack};
pub use deltas::{notify_answer_delta, AnswerDelta, DeltaCitation, DeltaSection, DeltaSource, ANSWER_DELTAS_CHANNEL};

fn parse_id(field: &str, s: &str) -> Result<Uuid, StoreError> {
    Uuid::parse_str(s).map_err(|_| StoreError::Invalid(format!("{field} {s:?} is not a UUID")))
}

fn occurred(e: &rag_events::Envelope) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(e.occurred_at).unwrap_or_else(Utc::now)
}

/// Characters of a conversation's title: one given on the page's route,
/// or one made from the question that opens the conversation.
pub const MAX_TITLE_CHARS: usize = 200;

/// The title of a conversation a question opens (every door, and the
/// projector for a conversation only the event names): the question's
/// first `MAX_TITLE_CHARS` characters, trimmed.
pub fn title_from_question(question: &str) -> String {
    question.trim().chars().take(MAX_TITLE_CHARS).collect::<String>().trim_end().to_string()
}

pub async fn apply_question_asked(tx: &mut Transaction<'_, Postgres>, e: &QuestionAsked) -> Result<(), StoreError> {
    let ws = &e.envelope.workspace_id;
    let conversation = parse_id("conversation_id", &e.conversation_id)?;
    let user = parse_id("user_message_id", &e.user_message_id)?;
    let assistant = parse_id("assistant_message_id", &e.assistant_message_id)?;
    let at = occurred(&e.envelope);
    let title = title_from_question(&e.question);
    sqlx::query(
        "INSERT INTO conversations (id, workspace_id, title, created_by, created_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(conversation)
    .bind(ws)
    .bind(&title)
    .bind(&e.asked_by)
    .bind(at)
    .execute(&mut **tx)
    .await?;
    // A conversation id of another workspace is refused, never joined.
    let owner: String =
        sqlx::query_scalar("SELECT workspace_id FROM conversations WHERE id = $1").bind(conversation).fetch_one(&mut **tx).await?;
    if &owner != ws {
        return Err(StoreError::Invalid(format!("conversation {conversation} belongs to another workspace")));
    }
    let metadata = serde_json::json!({"top_k": e.top_k, "document_ids": e.document_ids, "asked_by": e.asked_by});
    for (id, role, content, status, at) in [
        (user, "user", e.question.as_str(), MessageStatus::Done, at),
        // One microsecond later: the assistant message sorts after the question
        // (also when the answer was projected first and created it: the
        // question's time wins, whatever the order).
        (assistant, "assistant", "", MessageStatus::Pending, at + chrono::Duration::microseconds(1)),
    ] {
        sqlx::query(
            "INSERT INTO messages (id, conversation_id, workspace_id, role, content, status, metadata, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
             ON CONFLICT (id) DO UPDATE SET created_at = LEAST(messages.created_at, EXCLUDED.created_at)
             WHERE messages.workspace_id = EXCLUDED.workspace_id",
        )
        .bind(id)
        .bind(conversation)
        .bind(ws)
        .bind(role)
        .bind(content)
        .bind(status.as_str())
        .bind(if role == "user" { metadata.clone() } else { serde_json::json!({}) })
        .bind(at)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// Fills the assistant message; only a pending message changes, so a
/// replayed answer is a no-op. Questions and answers travel on different
/// topics, so the answer may be projected first: it then creates the
/// message, and the question's later insert leaves it alone.
pub async fn apply_answer_produced(tx: &mut Transaction<'_, Postgres>, e: &AnswerProduced) -> Result<(), StoreError> {
    let metadata = AnswerMetadata::of_event(e).to_json();
    let assistant = parse_id("assistant_message_id", &e.assistant_message_id)?;
    let conversation = parse_id("conversation_id", &e.conversation_id)?;
    let status = if e.failure.is_some() { MessageStatus::Failed } else { MessageStatus::Done };
    sqlx::query(
        "INSERT INTO messages (id, conversation_id, workspace_id, role, content, status, metadata, created_at, updated_at)
         VALUES ($1, $7, $2, 'assistant', $3, $4, $5, $6, $6)
         ON CONFLICT (id) DO UPDATE SET content = EXCLUDED.content, status = EXCLUDED.status,
                metadata = EXCLUDED.metadata, updated_at = EXCLUDED.updated_at
         WHERE messages.status = 'pending' AND messages.workspace_id = EXCLUDED.workspace_id",
    )
    .bind(assistant)
    .bind(&e.envelope.workspace_id)
    .bind(&e.answer)
    .bind(status.as_str())
    .bind(&metadata)
    .bind(occurred(&e.envelope))
    .bind(conversation)
    .execute(&mut **tx)
    .await?;
    deltas::notify_projected(tx, &e.envelope.workspace_id, conversation, assistant).await?;
    Ok(())
}

/// Lifecycle of a message: a question is `done` when recorded; its
/// assistant message is `pending` until the answer (or its failure) lands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageStatus {
    #[default]
    Pending,
    Done,
    Failed,
}

impl MessageStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageStatus::Pending => "pending",
            MessageStatus::Done => "done",
            MessageStatus::Failed => "failed",
        }
    }
}

impl std::str::FromStr for MessageStatus {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<Self, StoreError> {
        Ok(match s {
            "pending" => MessageStatus::Pending,
            "done" => MessageStatus::Done,
            "failed" => MessageStatus::Failed,
            other => return Err(StoreError::Invalid(format!("unknown message status {other:?}"))),
        })
    }
}

impl TryFrom<String> for MessageStatus {
    type Error = StoreError;
    fn try_from(s: String) -> Result<Self, StoreError> {
        s.parse()
    }
}

impl std::fmt::Display for MessageStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct MessageRow {
    pub id: Uuid,
    pub conversation_id: Uuid,
    pub workspace_id: String,
    pub role: String,
    pub content: String,
    #[sqlx(try_from = "String")]
    pub status: MessageStatus,
    pub metadata: serde_json::Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl MessageRow {
    /// An assistant message's answer metadata (empty while pending, and for
    /// a question).
    pub fn answer(&self) -> AnswerMetadata {
        AnswerMetadata::of_stored(&self.metadata).unwrap_or_default()
    }
}

pub(crate) const COLUMNS: &str = "id, conversation_id, workspace_id, role, content, status, metadata, created_at, updated_at";

pub async fn get(pool: &PgPool, workspace_id: &str, id: Uuid) -> Result<Option<MessageRow>, StoreError> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM messages WHERE id = $1 AND workspace_id = $2"))
        .bind(id)
        .bind(workspace_id)
        .fetch_optional(pool)
        .await?)
}

/// Completed messages of a conversation before the turn `(user, assistant)`
/// (oldest first), at most `limit` of the latest; the turn's own question
/// is not part of its history.
pub async fn history(
    pool: &PgPool,
    workspace_id: &str,
    conversation_id: Uuid,
    (user, assistant): (Uuid, Uuid),
    limit: i64,
) -> Result<Vec<MessageRow>, StoreError> {
    let mut rows: Vec<MessageRow> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM messages
         WHERE workspace_id = $1 AND conversation_id = $2 AND status = 'done' AND id <> $3 AND id <> $5
           AND created_at < coalesce((SELECT created_at FROM messages WHERE id = $3), now())
         ORDER BY created_at DESC LIMIT $4"
    ))
    .bind(workspace_id)
    .bind(conversation_id)
    .bind(assistant)
    .bind(limit)
    .bind(user)
    .fetch_all(pool)
    .await?;
    rows.reverse();
    Ok(rows)
}

/// Whether an answer of the conversation is still being written (its
/// assistant message pending).
pub async fn answer_pending(pool: &PgPool, workspace_id: &str, conversation_id: Uuid) -> Result<bool, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM messages
         WHERE workspace_id = $1 AND conversation_id = $2 AND role = 'assistant' AND status = 'pending')",
    )
    .bind(workspace_id)
    .bind(conversation_id)
    .fetch_one(pool)
    .await?)
}

/// All messages of a conversation, oldest first.
pub async fn list(pool: &PgPool, workspace_id: &str, conversation_id: Uuid) -> Result<Vec<MessageRow>, StoreError> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM messages WHERE workspace_id = $1 AND conversation_id = $2 ORDER BY created_at, id"))
        .bind(workspace_id)
        .bind(conversation_id)
        .fetch_all(pool)
        .await?)
}

/// Assistant messages of a conversation that left `pending`, in the order
/// of their last update, strictly after `after` (an `(updated_at, id)`
/// cursor): the feed behind the API's Server-Sent Events.
pub async fn status_updates_after(
    pool: &PgPool,
    workspace_id: &str,
    conversation_id: Uuid,
    after: Option<(DateTime<Utc>, Uuid)>,
    limit: i64,
) -> Result<Vec<MessageRow>, StoreError> {
    let (at, id) = (after.map(|a| a.0), after.map(|a| a.1).unwrap_or_else(Uuid::nil));
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM messages
         WHERE workspace_id = $1 AND conversation_id = $2 AND role = 'assistant' AND status <> 'pending'
           AND ($3::timestamptz IS NULL OR (updated_at, id) > ($3, $4))
         ORDER BY updated_at, id LIMIT $5"
    ))
    .bind(workspace_id)
    .bind(conversation_id)
    .bind(at)
    .bind(id)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct ConversationRow {
    pub id: Uuid,
    pub workspace_id: String,
    pub title: Option<String>,
    pub created_by: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// Creates a conversation before its first question (the API's "new
/// chat"). Idempotent on the id; QuestionAsked creates one the same way
/// when a producer asks in a conversation nobody created.
/// Conversations `created_by` started in the workspace holding an answer
/// whose text is `content`, newest first: where an OpenAI-compatible
/// client that sends the whole conversation back left off.
pub async fn conversations_with_answer(
    pool: &PgPool,
    workspace_id: &str,
    created_by: &str,
    content: &str,
    limit: i64,
) -> Result<Vec<Uuid>, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT m.conversation_id FROM messages m JOIN conversations c ON c.id = m.conversation_id AND c.workspace_id = m.workspace_id
         WHERE m.workspace_id = $1 AND c.created_by = $2 AND m.role = 'assistant' AND m.status = 'done' AND m.content = $3
         ORDER BY m.created_at DESC LIMIT $4",
    )
    .bind(workspace_id)
    .bind(created_by)
    .bind(content)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

pub async fn create_conversation(
    pool: &PgPool,
    id: Uuid,
    workspace_id: &str,
    title: Option<&str>,
    created_by: &str,
) -> Result<ConversationRow, StoreError> {
    sqlx::query(
        "INSERT INTO conversations (id, workspace_id, title, created_by, created_at) VALUES ($1, $2, $3, $4, now())
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(id)
    .bind(workspace_id)
    .bind(title)
    .bind(created_by)
    .execute(pool)
    .await?;
    get_conversation(pool, workspace_id, id)
        .await?
        .ok_or_else(|| StoreError::Invalid(format!("conversation {id} belongs to another workspace")))
}

pub async fn get_conversation(pool: &PgPool, workspace_id: &str, id: Uuid) -> Result<Option<ConversationRow>, StoreError> {
    Ok(sqlx::query_as("SELECT id, workspace_id, title, created_by, created_at FROM conversations WHERE id = $1 AND workspace_id = $2")
        .bind(id)
        .bind(workspace_id)
        .fetch_optional(pool)
        .await?)
}

/// Conversations of a workspace, newest first.
pub async fn list_conversations(pool: &PgPool, workspace_id: &str) -> Result<Vec<ConversationRow>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT id, workspace_id, title, created_by, created_at FROM conversations WHERE workspace_id = $1
         ORDER BY created_at DESC, id",
    )
    .bind(workspace_id)
    .fetch_all(pool)
    .await?)
}

/// One page of [`list_conversations`]: at most `limit` after `after` (the
/// `(created_at, id)` of the last one of the previous page), newest first.
pub async fn page_conversations(
    pool: &PgPool,
    workspace_id: &str,
    after: Option<(DateTime<Utc>, Uuid)>,
    limit: i64,
) -> Result<Vec<ConversationRow>, StoreError> {
    let (at, id) = after.unzip();
    Ok(sqlx::query_as(
        "SELECT id, workspace_id, title, created_by, created_at FROM conversations WHERE workspace_id = $1
           AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3))
         ORDER BY created_at DESC, id DESC LIMIT $4",
    )
    .bind(workspace_id)
    .bind(at)
    .bind(id)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// Every assistant message's status, for invariant checks (`rag-engine verify`).
pub async fn assistant_statuses(pool: &PgPool) -> Result<Vec<(Uuid, MessageStatus)>, StoreError> {
    let rows: Vec<(Uuid, String)> = sqlx::query_as("SELECT id, status FROM messages WHERE role = 'assistant'").fetch_all(pool).await?;
    rows.into_iter().map(|(id, status)| Ok((id, status.parse()?))).collect()
}

/// Assistant messages still pending whose question is at least `older_than_secs` old (0: all of them).
pub async fn count_pending_since(pool: &PgPool, older_than_secs: i64) -> Result<i64, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT count(*) FROM messages
         WHERE role = 'assistant' AND status = 'pending' AND created_at <= now() - make_interval(secs => $1)",
    )
    .bind(older_than_secs as f64)
    .fetch_one(pool)
    .await?)
}
