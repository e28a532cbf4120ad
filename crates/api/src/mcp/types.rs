//! The tools' wire types: what each tool takes and gives, as JSON Schema
//! (through schemars) and serde read them.

use rmcp::schemars;
use serde::{Deserialize, Serialize};

use crate::answered::{AnswerPlace, NumberedCitation};

/// A passage a search found: a document's raw text at a character range.
// Found by the application with the answerer's own retrieval (`rag_app`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Passage {
    pub document_id: String,
    pub filename: Option<String>,
    /// The page (from 1).
    pub page: u32,
    /// Start of the range in the document's raw text (characters).
    pub char_start: u64,
    /// End of the range (exclusive).
    pub char_end: u64,
    /// Exactly the raw text at char_start..char_end.
    pub text: String,
    /// The retrieval score (higher is better).
    pub score: f64,
}

/// Hybrid search over a workspace, as the answerer retrieves.
pub trait PassageSearch: Send + Sync {
    fn search<'a>(
        &'a self,
        workspace: &'a str,
        query: &'a str,
        top_k: usize,
    ) -> futures::future::BoxFuture<'a, Result<Vec<Passage>, String>>;
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct WorkspaceInfo {
    pub id: String,
    pub name: String,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Workspaces {
    pub workspaces: Vec<WorkspaceInfo>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SearchRequest {
    /// The workspace: its name or id (from list_workspaces).
    pub workspace: String,
    /// What to look for, in any language.
    pub query: String,
    /// How many passages (1-20, default 5).
    #[serde(default)]
    #[schemars(with = "u32", range(min = 1, max = 20), extend("default" = 5))]
    pub top_k: Option<u32>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Passages {
    pub passages: Vec<Passage>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct AskRequest {
    /// The workspace: its name or id (from list_workspaces).
    pub workspace: String,
    /// The question, in Vietnamese or English.
    pub question: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ReadRequest {
    /// The workspace: its name or id.
    pub workspace: String,
    /// The document id (a citation's or a passage's document_id).
    pub document_id: String,
    /// Start of the range in the document's raw text (characters).
    pub char_start: u64,
    /// End of the range (exclusive).
    pub char_end: u64,
    /// Characters shown before and after the range (default 300, at most 4000).
    #[serde(default)]
    #[schemars(with = "u32", extend("default" = 300))]
    pub context_chars: Option<u32>,
    /// The document revision the range is in (a citation's `revision`);
    /// absent: the one search reads now.
    #[serde(default)]
    #[schemars(with = "u32")]
    pub revision: Option<u32>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct PassageText {
    pub document_id: String,
    pub filename: Option<String>,
    /// The page (from 1) where the range starts.
    pub page: u32,
    pub char_start: u64,
    pub char_end: u64,
    /// Exactly the raw text at char_start..char_end.
    pub text: String,
    /// The raw text just before the range.
    pub before: String,
    /// The raw text just after the range.
    pub after: String,
}

/// What `ask` gives as structured content: the chat endpoint's answer,
/// typed so its `outputSchema` is declared and the content always matches
/// it (the answer is read into this shape and written from it).
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct AskAnswer {
    /// The answer: sections with [n] markers numbering the citations (the
    /// sources list is in the text content only).
    pub answer: String,
    pub citations: Vec<NumberedCitation>,
    pub rag: AnswerPlace,
}
