//! An answer while it is written: its text so far, sent to the listeners
//! (the API's event streams, `rag-engine ask`) with NOTIFY.

use sqlx::PgPool;
use uuid::Uuid;

use crate::StoreError;

/// Postgres channel of answers being written (`AnswerDelta` payloads).
pub const ANSWER_DELTAS_CHANNEL: &str = "answer_deltas";

/// The text an answer has so far, while the model writes it. Ephemeral:
/// sent with NOTIFY (nothing is stored, a listener that is not connected
/// misses it); the answer itself is the AnswerProduced event and the
/// message it is projected into.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AnswerDelta {
    pub workspace_id: String,
    pub conversation_id: Uuid,
    pub message_id: Uuid,
    /// Grows with each delta of one answering (a restarted answerer writes
    /// the answer again from 0). Each delta holds the whole text so far
    /// (from `from`): a listener replaces, never appends.
    pub seq: u64,
    /// Index of the first section in `sections` (earlier ones unchanged
    /// and left out when the whole answer would not fit a notification).
    pub from: usize,
    pub sections: Vec<DeltaSection>,
    /// What the model is being shown, sent as soon as retrieval found it
    /// (before the first words): a delta carrying these and no sections
    /// leaves the text so far as it is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<DeltaSource>,
    /// The words sent so far of the part being written were taken back
    /// and it is written again (the check held it back, or the model's
    /// reply was unreadable and it was asked again): the page says so.
    /// Set by the answerer, which knows; a later part starting after an
    /// earlier one's final (grounded, so sometimes shorter) text is not one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restart: bool,
    /// How many sections of the whole answer (counted from 0, not from
    /// `from`) are final: their part was checked and will be shown as it
    /// is (`combine_parts` of the parts done so far). A client that cannot
    /// take words back (an OpenAI-compatible chat client) shows only these.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub confirmed: usize,
    /// Not text: the answer is projected (its message is done or failed),
    /// sent when the projection commits. A listener reads the message now
    /// instead of at its next poll (the page's stream, the chat doors and
    /// `ask` waited up to a poll interval, 250 ms, for every answer).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub projected: bool,
}

impl AnswerDelta {
    /// The note that `message` of `conversation` in `workspace_id` is projected.
    pub fn projected(workspace_id: &str, conversation_id: Uuid, message_id: Uuid) -> AnswerDelta {
        AnswerDelta {
            workspace_id: workspace_id.to_string(),
            conversation_id,
            message_id,
            seq: 0,
            from: 0,
            sections: Vec::new(),
            sources: Vec::new(),
            restart: false,
            confirmed: 0,
            projected: true,
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A document the answer is being written from, and its pages (1-based)
/// among the passages read.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeltaSource {
    pub document_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    pub pages: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeltaSection {
    pub text: String,
    /// The section is complete: its text is final and its citations are
    /// known (the final answer may still abstain, after the check).
    pub closed: bool,
    /// A closed section's citations, as the final answer's are shaped
    /// (without lines and boxes, which the final answer brings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub citations: Vec<DeltaCitation>,
}

/// Where a citation of a section being written points.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeltaCitation {
    pub document_id: String,
    pub page_idx: u32,
    pub char_start: u64,
    pub char_end: u64,
    pub snippet_preview: String,
    /// The document revision the offsets are in.
    #[serde(default = "first_revision")]
    pub revision: i32,
}

fn first_revision() -> i32 {
    rag_model::FIRST_REVISION
}

/// Postgres refuses NOTIFY payloads of 8,000 bytes or more.
const NOTIFY_MAX_BYTES: usize = 7_900;

/// Sends `delta` to the answer listeners (the API's event streams). A
/// delta too large for a notification is sent from its last section only,
/// or not at all: the final answer still comes through the read model.
pub async fn notify_answer_delta(pool: &PgPool, delta: &AnswerDelta) -> Result<(), StoreError> {
    let mut payload = serde_json::to_string(delta).unwrap_or_default();
    if payload.len() > NOTIFY_MAX_BYTES && delta.sections.len() > 1 {
        let last = delta.sections.len() - 1;
        let tail = AnswerDelta { from: delta.from + last, sections: delta.sections[last..].to_vec(), ..delta.clone() };
        payload = serde_json::to_string(&tail).unwrap_or_default();
    }
    if payload.is_empty() || payload.len() > NOTIFY_MAX_BYTES {
        return Ok(());
    }
    send(pool, &payload).await
}

/// Tells the answer listeners, when `tx` commits (Postgres delivers a
/// transaction's notifications then, and never those of one rolled back),
/// that `message` is projected.
pub(crate) async fn notify_projected(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    workspace_id: &str,
    conversation_id: Uuid,
    message_id: Uuid,
) -> Result<(), StoreError> {
    let payload = serde_json::to_string(&AnswerDelta::projected(workspace_id, conversation_id, message_id)).unwrap_or_default();
    send(&mut **tx, &payload).await
}

/// NOTIFY on the answer-delta channel: at once on a pool, at commit in a
/// transaction.
async fn send<'e>(executor: impl sqlx::PgExecutor<'e>, payload: &str) -> Result<(), StoreError> {
    sqlx::query("SELECT pg_notify($1, $2)").bind(ANSWER_DELTAS_CHANNEL).bind(payload).execute(executor).await?;
    Ok(())
}
