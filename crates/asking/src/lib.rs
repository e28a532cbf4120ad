//! Asking a question, whichever door it comes through: the page's route,
//! `/v1/chat/completions`, MCP's `ask`, `rag-engine ask` and `rag-dev eval
//! answers` each read their own wire format and then share this:
//!
//! - [`question`]: what a question may be (length, characters, scope) and
//!   the title of a conversation a question opens;
//! - [`Ask`]: the one builder of `QuestionAsked`;
//! - [`AnswerWatch`]: waiting for the answer, with the text as it is
//!   written (the answer-delta notifications) and the projected message.
//!
//! Recording the event is the door's (the API also applies it to the read
//! model at once); answering is the answerer stage's.

pub mod question;
mod watch;

use rag_events::{ConversationTurn, Envelope, QuestionAsked};
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
    /// Earlier turns a client sent that the conversation does not hold.
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
