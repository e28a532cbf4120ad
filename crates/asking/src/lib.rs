//! Asking a question, whichever door it comes through: the page's route,
//! `/v1/chat/completions`, MCP's `ask`, `rag-engine ask` and `rag-dev eval
//! answers` each read their own wire format and then share this:
//!
//! - [`question`]: what a question may be (length, characters, scope) and
//!   the title of a conversation a question opens;
//! - [`Ask`]: the one builder of `QuestionAsked`, with the earlier turns
//!   of the conversation it continues ([`continued_turns`]);
//! - [`AnswerWatch`]: waiting for the answer, with the text as it is
//!   written (the answer-delta notifications) and the projected message.
//!
//! Recording the event is the door's (the API also applies it to the read
//! model at once); answering is the answerer stage's.

pub mod question;
mod watch;

use rag_events::{ConversationTurn, Envelope, QuestionAsked};
use rag_store::sqlx::PgPool;
use rag_store::StoreError;
use uuid::Uuid;

pub use watch::{AnswerWatch, Deltas, Watched};

/// A question to record, checked by the door ([`question::checked_question`],
/// [`question::checked_scope`]).
#[derive(Debug, Clone)]
pub struct Ask<'a> {
    pub workspace: &'a str,
    pub conversation: Uuid,
    pub question: String,
    /// Who asks (the user's id; `cli`, `eval`).
    pub asked_by: &'a str,
    /// What records it (`rag-engine/api@0.1.0`): the envelope's producer.
    pub recorded_by: &'a str,
    pub top_k: Option<i32>,
    pub document_ids: Vec<String>,
    /// The earlier turns: those a client sent (the OpenAI door), or the
    /// conversation's own ([`continued_turns`]). Empty for a new one.
    pub history: Vec<ConversationTurn>,
}

/// A question as recorded: its event and the ids of its two messages.
#[derive(Debug, Clone)]
pub struct Asked {
    pub event: QuestionAsked,
    pub user_message: Uuid,
    pub assistant_message: Uuid,
}

impl Ask<'_> {
    /// A new question in a conversation of `workspace`, nothing else set.
    pub fn new<'a>(workspace: &'a str, conversation: Uuid, question: String, asked_by: &'a str, recorded_by: &'a str) -> Ask<'a> {
        Ask { workspace, conversation, question, asked_by, recorded_by, top_k: None, document_ids: Vec::new(), history: Vec::new() }
    }

    /// The event that records it, with fresh ids for its two messages.
    pub fn asked(self) -> Asked {
        let (user_message, assistant_message) = (Uuid::now_v7(), Uuid::now_v7());
        let event = QuestionAsked {
            envelope: Envelope::originating(self.workspace, self.recorded_by),
            conversation_id: self.conversation.to_string(),
            user_message_id: user_message.to_string(),
            assistant_message_id: assistant_message.to_string(),
            question: self.question,
            asked_by: self.asked_by.to_string(),
            top_k: self.top_k,
            document_ids: self.document_ids,
            history: self.history,
        };
        Asked { event, user_message, assistant_message }
    }
}

/// Earlier turns a question carries at most, and the characters kept of
/// each: more than the answerer reads (its last six turns, 1,500
/// characters each), so a change there needs none here, and an event stays
/// far below the broker's message size whatever a conversation holds.
pub const HISTORY_CARRIED: usize = 12;
pub const TURN_CHARS_CARRIED: usize = 4000;

/// The turns a question in `conversation` continues: its last answered
/// messages, oldest first, as the asker saw them. Carried in the event, so
/// the answerer reads this history rather than the read model as it
/// stands when it gets to the question (which may not have projected the
/// last turn yet), and a replay of the question reads the same one.
/// None while an earlier answer is still being written (the page lets a
/// user ask meanwhile): fixed now, the history would hold that question
/// without its answer for good, so the answerer reads the stored turns
/// when it gets to the question instead, by which time it has written it.
pub async fn continued_turns(pool: &PgPool, workspace: &str, conversation: Uuid) -> Result<Vec<ConversationTurn>, StoreError> {
    if rag_store::messages::answer_pending(pool, workspace, conversation).await? {
        return Ok(Vec::new());
    }
    let rows = rag_store::messages::history(pool, workspace, conversation, (Uuid::nil(), Uuid::nil()), HISTORY_CARRIED as i64).await?;
    Ok(rows.into_iter().map(|m| ConversationTurn { role: m.role, content: m.content.chars().take(TURN_CHARS_CARRIED).collect() }).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_is_recorded_with_its_two_messages() {
        let conversation = Uuid::now_v7();
        let mut ask = Ask::new("ws", conversation, "Doanh thu?".into(), "u1", "rag-engine/test");
        ask.top_k = Some(5);
        let asked = ask.asked();
        let e = &asked.event;
        assert_eq!((e.envelope.workspace_id.as_str(), e.envelope.producer.as_str()), ("ws", "rag-engine/test"));
        assert_eq!(e.conversation_id, conversation.to_string());
        assert_eq!(e.user_message_id, asked.user_message.to_string());
        assert_eq!(e.assistant_message_id, asked.assistant_message.to_string());
        assert_ne!(asked.user_message, asked.assistant_message);
        assert_eq!((e.question.as_str(), e.asked_by.as_str(), e.top_k), ("Doanh thu?", "u1", Some(5)));
    }
}
