//! Typed events. Field names and order follow `schemas/*.avsc`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::catalog::EventType;

/// The envelope every event carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub event_id: String,
    /// Milliseconds since the Unix epoch, UTC.
    pub occurred_at: i64,
    pub workspace_id: String,
    pub correlation_id: String,
    pub causation_id: Option<String>,
    pub producer: String,
}

impl Envelope {
    /// Envelope of an event that starts a chain (an upload, a question):
    /// a fresh id that is also the correlation id.
    pub fn originating(workspace_id: impl Into<String>, producer: impl Into<String>) -> Self {
        let id = Uuid::now_v7().to_string();
        Envelope {
            event_id: id.clone(),
            occurred_at: now_millis(),
            workspace_id: workspace_id.into(),
            correlation_id: id,
            causation_id: None,
            producer: producer.into(),
        }
    }

    /// Envelope of an event a stage derives from `input`. The id is
    /// deterministic (UUIDv5 of the input event id and the stage), so a
    /// re-delivered input yields the same output event id.
    pub fn caused_by(input: &Envelope, stage: &str, producer: impl Into<String>) -> Self {
        let seed = format!("{}/{}", input.event_id, stage);
        Envelope {
            event_id: Uuid::new_v5(&Uuid::NAMESPACE_OID, seed.as_bytes()).to_string(),
            occurred_at: now_millis(),
            workspace_id: input.workspace_id.clone(),
            correlation_id: input.correlation_id.clone(),
            causation_id: Some(input.event_id.clone()),
            producer: producer.into(),
        }
    }
}

pub fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A permanent failure of a stage for one input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentUploaded {
    pub envelope: Envelope,
    pub document_id: String,
    pub blob_uri: String,
    pub filename: String,
    pub content_type: String,
    pub size_bytes: i64,
    pub sha256: String,
    pub uploaded_by: String,
    #[serde(default)]
    pub metadata: HashMap<String, String>,
    /// The revision these bytes are: 1 for a first upload, higher for each
    /// change of the bytes under the same document id (v2).
    #[serde(default = "first_revision")]
    pub revision: i32,
    /// SHA-256 of the revision these bytes replace (v2).
    #[serde(default)]
    pub replaces_sha256: Option<String>,
}

/// The revision of every event written before revisions existed.
pub const FIRST_REVISION: i32 = 1;

fn first_revision() -> i32 {
    FIRST_REVISION
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentParsed {
    pub envelope: Envelope,
    pub document_id: String,
    pub parser_name: String,
    pub parser_version: String,
    pub page_count: Option<i32>,
    pub segment_count: Option<i32>,
    pub char_count: Option<i64>,
    pub full_text_uri: Option<String>,
    pub full_text_sha256: Option<String>,
    pub segments_uri: Option<String>,
    pub segments_sha256: Option<String>,
    pub failure: Option<Failure>,
    /// Zero-based pages left without text (v2).
    #[serde(default)]
    pub pages_without_text: Vec<i32>,
    /// Zero-based pages whose text came from OCR (v2).
    #[serde(default)]
    pub ocr_pages: Vec<i32>,
    /// Lines of the full text (v3).
    #[serde(default)]
    pub line_count: Option<i64>,
    /// Each page as displayed, the frame of the segments' boxes (v3).
    #[serde(default)]
    pub pages: Vec<PageSize>,
    /// The document revision parsed (v4).
    #[serde(default = "first_revision")]
    pub revision: i32,
}

/// A page as displayed; segment boxes are in its unit, origin top-left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageSize {
    pub page_idx: i32,
    pub width: f32,
    pub height: f32,
    pub unit: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentChunked {
    pub envelope: Envelope,
    pub document_id: String,
    pub chunking_profile: String,
    pub chunking_version: String,
    pub chunk_count: Option<i32>,
    pub chunks_uri: Option<String>,
    pub chunks_sha256: Option<String>,
    /// Sentences written to the model, not to a reader (v2; None before).
    #[serde(default)]
    pub instructions_found: Option<i32>,
    pub failure: Option<Failure>,
    /// The document revision chunked (v3).
    #[serde(default = "first_revision")]
    pub revision: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentIngested {
    pub envelope: Envelope,
    pub document_id: String,
    pub chunking_version: String,
    pub embedding_model: Option<String>,
    pub embedding_dimension: Option<i32>,
    pub chunk_count: i32,
    pub failure: Option<Failure>,
    /// The document revision indexed (v2).
    #[serde(default = "first_revision")]
    pub revision: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionAsked {
    pub envelope: Envelope,
    pub conversation_id: String,
    pub user_message_id: String,
    pub assistant_message_id: String,
    pub question: String,
    pub asked_by: String,
    pub top_k: Option<i32>,
    #[serde(default)]
    pub document_ids: Vec<String>,
    /// Earlier turns of the question, oldest first (v2): those a client
    /// sent, or the conversation's as the door read them
    /// (`rag_asking::continued_turns`); empty: the conversation's stored
    /// messages, as they stand when the answerer reads them, are its history.
    #[serde(default)]
    pub history: Vec<ConversationTurn>,
}

/// One earlier turn of a conversation: as a client sent it, or as the
/// door read it from the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationTurn {
    /// `user` or `assistant`.
    pub role: String,
    pub content: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Citation {
    pub source_id: String,
    pub chunk_id: String,
    pub document_id: String,
    pub segment_index: i32,
    pub page_idx: i32,
    /// Unicode scalar value offsets into the document's full raw text.
    pub char_start: i64,
    pub char_end: i64,
    pub snippet_preview: String,
    /// Exactly `full_text[char_start..char_end]` (v2; v1 carried it in
    /// `retrieval_json.citation_texts`).
    #[serde(default)]
    pub text: Option<String>,
    /// Lines of the full text covered, 1-based, inclusive (v2).
    #[serde(default)]
    pub line_start: Option<i32>,
    #[serde(default)]
    pub line_end: Option<i32>,
    /// Where the cited characters are on their pages (v2).
    #[serde(default)]
    pub boxes: Vec<PageBox>,
    /// In a spreadsheet, the sheet and cells of the cited rows,
    /// `Doanh thu!A5:D5` (v4).
    #[serde(default)]
    pub cell_range: Option<String>,
    /// The document revision the offsets and text are in (v5).
    #[serde(default = "first_revision")]
    pub revision: i32,
}

/// A box on a page as displayed, in the page's unit, origin top-left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageBox {
    pub page_idx: i32,
    pub x0: f32,
    pub y0: f32,
    pub x1: f32,
    pub y1: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    pub text: String,
    pub source_ids: Vec<String>,
    pub citations: Vec<Citation>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmUsage {
    pub model: String,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub total_tokens: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerProduced {
    pub envelope: Envelope,
    pub conversation_id: String,
    pub assistant_message_id: String,
    pub answer: String,
    pub mode: String,
    /// The documents do not answer: the answer says so, uncited (v3).
    #[serde(default)]
    pub abstained: bool,
    #[serde(default)]
    pub sections: Vec<Section>,
    #[serde(default)]
    pub citations: Vec<Citation>,
    pub llm_usage: Option<LlmUsage>,
    pub retrieval_json: String,
    pub failure: Option<Failure>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentDeleted {
    pub envelope: Envelope,
    pub document_id: String,
    pub deleted_by: String,
}

/// Implemented by every typed event.
pub trait Event: Serialize + for<'de> Deserialize<'de> + Send + Sync + 'static {
    const TYPE: EventType;
    fn envelope(&self) -> &Envelope;
    /// The Kafka message key: the entity whose events must stay ordered.
    fn key(&self) -> &str;
}

macro_rules! event {
    ($t:ident, $key:ident) => {
        impl Event for $t {
            const TYPE: EventType = EventType::$t;
            fn envelope(&self) -> &Envelope {
                &self.envelope
            }
            fn key(&self) -> &str {
                &self.$key
            }
        }
    };
}

event!(DocumentUploaded, document_id);
event!(DocumentParsed, document_id);
event!(DocumentChunked, document_id);
event!(DocumentIngested, document_id);
event!(QuestionAsked, conversation_id);
event!(AnswerProduced, conversation_id);
event!(DocumentDeleted, document_id);
