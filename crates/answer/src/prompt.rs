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
Each excerpt starts with [CHUNK_ID=...] and where it is in its document ([Source: Page X, Lines Y-Z]). Reply with one JSON object and nothing else:\n\
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
        context.push_str(&format!("[CHUNK_ID={}] [Source: {}]", c.chunk_id, c.location()));
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
            page_start: 0,
            page_end: 0,
            lines: None,
            segments: vec![],
        };
        let history: Vec<Turn> =
            (0..5).map(|i| Turn { role: if i % 2 == 0 { "user" } else { "assistant" }.into(), content: format!("turn {i}") }).collect();
        let m = build("Why?", &[chunk], &history, 2);
        assert!(m[1].content.contains("[CHUNK_ID=chunk-1] [Source: Page 1] (from r.txt)\nRevenue grew."), "{}", m[1].content);
        assert_eq!(m.len(), 2 + 2 + 1);
        assert_eq!(m[2].content, "turn 3");
        assert_eq!(m.last().unwrap().content, "Why?");
    }
}

#[cfg(test)]
mod location_tests {
    use crate::SourceChunk;

    #[test]
    fn a_chunk_is_tagged_with_its_pages_and_lines_as_in_the_seed() {
        let mut c = SourceChunk {
            chunk_id: "chunk-2".into(),
            document_id: "d".into(),
            content: "x".into(),
            char_start: 0,
            char_end: 1,
            filename: None,
            segments: vec![],
            page_start: 1,
            page_end: 1,
            lines: Some((40, 52)),
        };
        assert_eq!(c.location(), "Page 2, Lines 40-52");
        let m = super::build("q", std::slice::from_ref(&c), &[], 0);
        assert!(m[1].content.contains("[CHUNK_ID=chunk-2] [Source: Page 2, Lines 40-52]"));
        (c.page_end, c.lines) = (2, Some((7, 7)));
        assert_eq!(c.location(), "Pages 2-3, Line 7");
    }
}
