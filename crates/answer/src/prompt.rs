//! The chat messages sent to the model: instructions, the retrieved chunks
//! as `[CHUNK_ID=chunk-…]` blocks, the last turns of the conversation, and
//! the question.

use serde::{Deserialize, Serialize};

use crate::SourceChunk;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn new(role: &str, content: impl Into<String>) -> Self {
        ChatMessage { role: role.to_string(), content: content.into() }
    }
}

/// One earlier turn of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// `user` or `assistant`.
    pub role: String,
    pub content: String,
}

pub const SYSTEM: &str = "You answer questions using only the document excerpts provided. \
Each excerpt starts with [CHUNK_ID=...]. Reply with one JSON object and nothing else:\n\
{\"sections\": [{\"text\": \"...\", \"source_ids\": [\"chunk-...\"], \"quotes\": [\"...\"]}]}\n\
Rules: split the answer into short sections, each making one point. source_ids lists the CHUNK_IDs \
that support the section, copied exactly; never invent ids. quotes are short spans copied verbatim \
from those excerpts (a few words to one sentence) that prove the section. If the excerpts do not \
contain the answer, return one section saying so, with empty source_ids and quotes. Answer in the \
language of the question.";

/// Characters of history kept per earlier turn.
const TURN_CHARS: usize = 1500;

pub fn build(question: &str, chunks: &[SourceChunk], history: &[Turn], max_turns: usize) -> Vec<ChatMessage> {
    let mut context = String::from("Document excerpts:\n\n");
    for c in chunks {
        context.push_str(&format!("[CHUNK_ID={}]", c.chunk_id));
        if let Some(f) = &c.filename {
            context.push_str(&format!(" (from {f})"));
        }
        context.push('\n');
        context.push_str(c.content.trim());
        context.push_str("\n\n");
    }
    let mut messages = vec![ChatMessage::new("system", SYSTEM), ChatMessage::new("system", context)];
    let start = history.len().saturating_sub(max_turns);
    for t in &history[start..] {
        let role = if t.role == "assistant" { "assistant" } else { "user" };
        messages.push(ChatMessage::new(role, t.content.chars().take(TURN_CHARS).collect::<String>()));
    }
    messages.push(ChatMessage::new("user", question));
    messages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_history_and_question_in_order() {
        let chunk = SourceChunk {
            chunk_id: "chunk-1".into(),
            document_id: "d".into(),
            content: "Revenue grew.".into(),
            char_start: 0,
            char_end: 13,
            filename: Some("r.txt".into()),
            segments: vec![],
        };
        let history: Vec<Turn> =
            (0..5).map(|i| Turn { role: if i % 2 == 0 { "user" } else { "assistant" }.into(), content: format!("turn {i}") }).collect();
        let m = build("Why?", &[chunk], &history, 2);
        assert!(m[1].content.contains("[CHUNK_ID=chunk-1] (from r.txt)\nRevenue grew."));
        assert_eq!(m.len(), 2 + 2 + 1);
        assert_eq!(m[2].content, "turn 3");
        assert_eq!(m.last().unwrap().content, "Why?");
    }
}
