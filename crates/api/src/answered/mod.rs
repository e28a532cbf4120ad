//! A finished answer as every door of the API gives it: the sections' text
//! with `[n]` markers, the citations numbered as the markers are (each
//! with its document's name, page or cells, exact text and a link to the
//! passage on the page), and where the answer lives. The OpenAI endpoint
//! and MCP's `ask` write these in their own wire formats.

pub(crate) mod text;

use std::collections::HashMap;
use std::time::Duration;

use axum::http::HeaderMap;
use rag_asking::{AnswerWatch, Ask, Deltas};
use rag_store::messages::{AnswerMetadata, MessageRow, MessageStatus};
use rmcp::schemars;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use self::text::{sources_list, with_markers, ListedSource};
use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::AppState;

/// How long a door waits for its answer before it gives up (the question
/// stays asked: its answer shows on the page when it comes).
pub const ANSWER_WAIT: Duration = Duration::from_secs(300);

/// One citation of an answer: a document's raw text at a character range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct NumberedCitation {
    /// Its marker's number in the answer ([1] is 1).
    pub index: u32,
    pub document_id: String,
    pub filename: Option<String>,
    /// The page (from 1), for a document that has pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// A spreadsheet's cells (`Sheet1!A2:E2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell_range: Option<String>,
    /// Start of the range in the document's raw text (characters).
    pub char_start: u64,
    /// End of the range (exclusive).
    pub char_end: u64,
    /// Exactly the raw text at char_start..char_end.
    pub text: String,
    /// Opens the conversation on the page with the passage highlighted.
    pub url: String,
    /// The document revision the range is in (read_passage takes it).
    #[serde(default = "first_revision")]
    pub revision: u32,
}

fn first_revision() -> u32 {
    1
}

/// Where the answer lives on rag-engine's page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct AnswerPlace {
    pub workspace_id: String,
    pub conversation_id: String,
    pub message_id: String,
    /// The documents do not support an answer (it says so, without citations).
    pub abstained: bool,
}

/// Where the page is, for citation links: the request's own host.
pub(crate) fn page_base(headers: &HeaderMap) -> String {
    let host = headers
        .get("x-forwarded-host")
        .or_else(|| headers.get(axum::http::header::HOST))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    let scheme = headers.get("x-forwarded-proto").and_then(|v| v.to_str().ok()).filter(|p| *p == "https").unwrap_or("http");
    format!("{scheme}://{host}")
}

/// The page's address of a conversation, for citation links.
#[derive(Debug, Clone)]
pub(crate) struct Link {
    pub base: String,
    pub ws: String,
    pub conversation: Uuid,
}

impl Link {
    /// Opens the page on the conversation with the passage highlighted, in
    /// the revision of the document it quoted (the document may change).
    fn passage(&self, document: &str, start: u64, end: u64, revision: u32) -> String {
        format!("{}/#ws={}&c={}&doc={document}&span={start}-{end}&rev={revision}", self.base, self.ws, self.conversation)
    }
}

/// Why a door has no answer to give.
#[derive(Debug)]
pub(crate) enum NoAnswer {
    Api(ApiError),
    /// Not within [`ANSWER_WAIT`].
    TimedOut,
    /// The answer failed (the model is unreachable and no fallback was
    /// allowed, for instance): why.
    Failed(String),
}

impl From<ApiError> for NoAnswer {
    fn from(e: ApiError) -> Self {
        NoAnswer::Api(e)
    }
}

impl From<rag_store::StoreError> for NoAnswer {
    fn from(e: rag_store::StoreError) -> Self {
        NoAnswer::Api(e.into())
    }
}

/// A finished answer with its numbered citations.
#[derive(Debug, Clone)]
pub(crate) struct Answered {
    pub row: MessageRow,
    pub answer: AnswerMetadata,
    pub citations: Vec<NumberedCitation>,
    pub place: AnswerPlace,
}

impl Answered {
    /// The stored answer `row` (done or failed) of a conversation of `ws`.
    pub async fn read(state: &AppState, row: MessageRow, link: &Link) -> Result<Answered, NoAnswer> {
        let answer = row.answer();
        if row.status == MessageStatus::Failed {
            return Err(NoAnswer::Failed(answer.failure.map_or_else(|| row.content.clone(), |f| f.message)));
        }
        let citations = numbered(state, &link.ws, &answer, link).await?;
        let place = AnswerPlace {
            workspace_id: link.ws.clone(),
            conversation_id: link.conversation.to_string(),
            message_id: row.id.to_string(),
            abstained: answer.abstained,
        };
        Ok(Answered { row, answer, citations, place })
    }

    /// The answer's text with `[n]` markers, and the parts of the question
    /// the documents do not answer said after the answered ones (never a
    /// section: a section always cites).
    pub fn text(&self) -> String {
        if self.answer.sections.is_empty() {
            return self.row.content.clone();
        }
        let text = with_markers(self.answer.sections.iter().map(|s| (s.text.as_str(), s.citations.len(), true)));
        match &self.answer.retrieval.unanswered_text {
            Some(line) => format!("{text}\n\n{line}"),
            None => text,
        }
    }

    /// Its sources as a reader's text ends with them, headed in the
    /// question's language.
    pub fn sources_text(&self) -> String {
        let listed: Vec<ListedSource<'_>> = self
            .citations
            .iter()
            .map(|c| ListedSource {
                index: u64::from(c.index),
                name: c.filename.as_deref().unwrap_or(&c.document_id),
                place: match (c.page, &c.cell_range) {
                    (_, Some(cells)) => Some(cells.clone()),
                    (Some(p), None) => Some(format!("p. {p}")),
                    (None, None) => None,
                },
                quote: &c.text,
                url: &c.url,
            })
            .collect();
        sources_list(&listed, self.answer.retrieval.query_language.as_deref() == Some("vi"))
    }

    /// The text with markers, then its sources, for a reader.
    pub fn text_with_sources(&self) -> String {
        self.text() + &self.sources_text()
    }

    /// `(prompt, completion, total)` tokens of the model, 0 without one.
    pub fn usage(&self) -> (i64, i64, i64) {
        self.answer.llm_usage.as_ref().map_or((0, 0, 0), |u| (u.prompt_tokens, u.completion_tokens, u.total_tokens))
    }
}

/// The citations of `answer`, numbered as its markers are.
async fn numbered(state: &AppState, ws: &str, answer: &AnswerMetadata, link: &Link) -> Result<Vec<NumberedCitation>, ApiError> {
    let mut documents: HashMap<String, Option<rag_store::documents::DocumentRow>> = HashMap::new();
    let mut out = Vec::new();
    for c in answer.sections.iter().flat_map(|s| &s.citations) {
        if !documents.contains_key(&c.document_id) {
            let found = match Uuid::parse_str(&c.document_id) {
                Ok(id) => rag_store::documents::get(state.pool(), ws, id).await?,
                Err(_) => None,
            };
            documents.insert(c.document_id.clone(), found);
        }
        let d = documents.get(&c.document_id).and_then(Option::as_ref);
        let (start, end) = (c.char_start.max(0) as u64, c.char_end.max(0) as u64);
        let revision = c.revision.max(1) as u32;
        let cell_range = c.cell_range.clone();
        out.push(NumberedCitation {
            index: out.len() as u32 + 1,
            document_id: c.document_id.clone(),
            filename: d.and_then(|d| d.filename.clone()),
            page: (cell_range.is_none() && d.is_some_and(has_pages)).then_some(c.page_idx.max(0) as u32 + 1),
            cell_range,
            char_start: start,
            char_end: end,
            text: c.text.clone().unwrap_or_default(),
            url: link.passage(&c.document_id, start, end, revision),
            revision,
        });
    }
    Ok(out)
}

/// Whether a document's citations name a page: formats that have pages
/// (PDF, pictures, presentations, documents of more than one page), not
/// text, Markdown, web pages or spreadsheets (whose cells are named).
fn has_pages(d: &rag_store::documents::DocumentRow) -> bool {
    let ct = d.content_type.as_deref().unwrap_or_default();
    ct == "application/pdf" || ct.starts_with("image/") || ct.contains("presentation") || d.page_count.unwrap_or(1) > 1
}

/// Asks `question` (checked by the door) in a new conversation of `ws`,
/// titled after it, and waits for the answer (MCP's `ask`).
pub(crate) async fn ask_in_new_conversation(
    state: &AppState,
    user: &AuthUser,
    ws: &str,
    question: &str,
    base: String,
) -> Result<Answered, NoAnswer> {
    let title = crate::question::title_from_question(question);
    let conversation = rag_store::messages::create_conversation(state.pool(), Uuid::now_v7(), ws, Some(&title), &user.user_id).await?.id;
    let asked = crate::routes::conversations::record(
        state,
        Ask::new(ws, conversation, question.to_string(), &user.user_id, crate::routes::conversations::PRODUCER),
    )
    .await?;
    let link = Link { base, ws: ws.to_string(), conversation };
    let row = wait(state, ws, asked.assistant_message).await?;
    Answered::read(state, row, &link).await
}

/// Waits for the answer `message` of `ws`: read when the projector says it
/// is projected, and every poll interval in case that note is missed.
pub(crate) async fn wait(state: &AppState, ws: &str, message: Uuid) -> Result<MessageRow, NoAnswer> {
    let deltas = Deltas::Broadcast(state.answer_deltas());
    let mut watch = AnswerWatch::new(state.pool().clone(), ws, message, deltas, ANSWER_WAIT, state.config().sse_poll);
    watch.answer().await?.ok_or(NoAnswer::TimedOut)
}
