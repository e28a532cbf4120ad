// Kept whole at ~630 lines: every request and response body of the API, the OpenAPI document's schemas, in one place, so a client author reads the wire in one file.
//! The API's request and response bodies (also the OpenAPI schemas).

use chrono::{DateTime, Utc};
use rag_store::api_keys::ApiKeyRow;
use rag_store::documents::{DocumentRow, DocumentStatus};
use rag_store::messages::{ConversationRow, MessageRow, MessageStatus};
use rag_store::raw::SegmentRow;
use rag_store::workspaces::WorkspaceRow;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWorkspace {
    /// 1-200 characters.
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Workspace {
    pub id: String,
    pub name: String,
    pub created_at: DateTime<Utc>,
}

impl From<WorkspaceRow> for Workspace {
    fn from(r: WorkspaceRow) -> Self {
        Workspace { id: r.id, name: r.name, created_at: r.created_at }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WorkspaceList {
    pub workspaces: Vec<Workspace>,
    /// Where the next page starts (`?cursor=`); absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateApiKey {
    /// What the key is for, to tell keys apart (1-100 characters).
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
    /// The one workspace the key reaches; absent: every workspace of yours.
    #[serde(default)]
    pub workspace_id: Option<String>,
    /// Days until the key stops working (1-3650); absent: until revoked.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 3650)]
    pub expires_in_days: Option<u32>,
    /// Whether chat replies (`/v1/chat/completions`) for this key end with
    /// their sources as a Markdown list in the text; default true. Turn it
    /// off for a client that reads the structured `citations`.
    #[serde(default)]
    pub sources_in_content: Option<bool>,
}

/// An API key as lists show it: never its secret.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ApiKey {
    pub id: Uuid,
    pub name: String,
    /// The one workspace it reaches; null: every workspace of its owner.
    pub workspace_id: Option<String>,
    /// How the key starts (`rag_<12 hex digits>_…`), to recognise it.
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// The last request made with it (recorded at most once a minute).
    pub last_used_at: Option<DateTime<Utc>>,
    /// Whether `/v1/chat/completions` writes an answer's sources into the
    /// reply's text for this key (a request's `sources_in_content` wins).
    pub sources_in_content: bool,
}

impl From<ApiKeyRow> for ApiKey {
    fn from(r: ApiKeyRow) -> Self {
        ApiKey {
            id: r.id,
            name: r.name,
            workspace_id: r.workspace_id,
            prefix: format!("{}{}_", crate::keys::PREFIX, r.lookup),
            created_at: r.created_at,
            expires_at: r.expires_at,
            revoked_at: r.revoked_at,
            last_used_at: r.last_used_at,
            sources_in_content: r.sources_in_content,
        }
    }
}

/// A key just made, with its secret: shown this once.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreatedApiKey {
    #[serde(flatten)]
    pub key: ApiKey,
    /// The bearer token (`Authorization: Bearer <secret>`). Not stored: it cannot be shown again.
    pub secret: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ApiKeyList {
    pub keys: Vec<ApiKey>,
}

/// A document and where it is in the pipeline.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Document {
    pub id: Uuid,
    pub workspace_id: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub size_bytes: Option<i64>,
    pub sha256: Option<String>,
    pub uploaded_by: Option<String>,
    #[schema(value_type = Object)]
    pub metadata: serde_json::Value,
    /// uploaded, parsed, chunked, ingested or failed.
    #[schema(value_type = String, example = "ingested")]
    pub status: DocumentStatus,
    /// Set when failed: a stable code (e.g. `corrupt_pdf`, `empty_document`).
    pub failure_code: Option<String>,
    /// Set when failed: what went wrong, for people.
    pub failure_reason: Option<String>,
    pub page_count: Option<i32>,
    /// Zero-based pages with no text (not searchable).
    pub pages_without_text: Vec<i32>,
    /// Zero-based pages read by OCR.
    pub ocr_pages: Vec<i32>,
    /// The chunking version search reads for this document (`name@version`).
    pub active_chunking_version: Option<String>,
    pub chunk_count: Option<i32>,
    /// Sentences of the document written to the model rather than to a
    /// reader ("Ignore all previous instructions…"): kept out of every
    /// answer. Absent until the document is chunked.
    pub instructions_found: Option<i32>,
    pub uploaded_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
    /// The revision search reads (1 for a document never changed); absent
    /// before one is ingested.
    pub revision: Option<i32>,
    /// The newest revision uploaded (`PUT` on the document makes one); the
    /// status is this revision's. Above `revision` while a change is on its
    /// way: search reads the earlier one until the new one is ingested.
    pub latest_revision: i32,
}

impl From<DocumentRow> for Document {
    fn from(r: DocumentRow) -> Self {
        Document {
            id: r.id,
            workspace_id: r.workspace_id,
            filename: r.filename,
            content_type: r.content_type,
            size_bytes: r.size_bytes,
            sha256: r.sha256,
            uploaded_by: r.uploaded_by,
            metadata: r.metadata,
            status: r.status,
            failure_code: r.failure_code,
            failure_reason: r.failure_reason,
            page_count: r.page_count,
            pages_without_text: r.pages_without_text,
            ocr_pages: r.ocr_pages,
            active_chunking_version: r.active_chunking_version,
            chunk_count: r.chunk_count,
            instructions_found: r.instructions_found,
            uploaded_at: r.uploaded_at,
            updated_at: r.updated_at,
            revision: r.revision,
            latest_revision: r.latest_revision,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DocumentList {
    pub documents: Vec<Document>,
    /// Where the next page starts (`?cursor=`); absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The multipart form of an upload.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct UploadForm {
    /// The document; its accepted content types are listed below (the
    /// OpenAPI document's description of this field names each with its
    /// file extensions).
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UploadAccepted {
    pub document_id: Uuid,
    pub workspace_id: String,
    /// Always `uploaded`: parsing, chunking and indexing follow asynchronously.
    #[schema(value_type = String, example = "uploaded")]
    pub status: DocumentStatus,
    pub filename: String,
    pub content_type: String,
    pub size_bytes: u64,
    pub sha256: String,
    /// The revision these bytes are: 1 for a new document, higher for a
    /// change of an existing one.
    pub revision: i32,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeleteAccepted {
    pub document_id: Uuid,
    /// Always `deleted`.
    #[schema(value_type = String, example = "deleted")]
    pub status: DocumentStatus,
}

/// One piece of the raw text: the segments tile the document's full text,
/// so `text` is `full_text[char_start..char_end]` (Unicode scalar values).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Segment {
    pub segment_index: i32,
    pub page_idx: i32,
    pub char_start: i64,
    pub char_end: i64,
    pub text: String,
    /// First line of the full text the segment is on: line 1 starts at
    /// character 0 and every `\n` starts a new one, for every format.
    pub line_start: Option<i32>,
    /// Last line with text of the segment (its trailing blank line aside).
    pub line_end: Option<i32>,
    /// Where the segment is on its page: one box per piece of line; empty
    /// for formats without pages.
    pub boxes: Vec<LineBox>,
    /// In a spreadsheet, the row's sheet and cells: `Doanh thu!A5:D5` (its
    /// sheet is its page). Absent for other formats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell_range: Option<String>,
    /// In a spreadsheet, the row is the sheet's header row (column names).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub header_row: bool,
    /// In a spreadsheet, the row's cells: what a viewer needs to draw the
    /// rows as a table under their header row. Absent for other formats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<SheetCells>,
}

/// A spreadsheet row's place in its sheet and its cells' values in the
/// raw text. Rows and columns are zero-based and inclusive (`first_row` 4,
/// `first_col` 0, `last_col` 3 is `A5:D5`); the columns span the sheet's
/// used columns, so every row of a sheet has the same.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SheetCells {
    /// The sheet's name (a CSV's: the file's name without its extension).
    pub sheet: String,
    pub first_row: u32,
    pub first_col: u32,
    pub last_row: u32,
    pub last_col: u32,
    /// The sheet's non-empty cells in this segment, in column order: each
    /// cell's value is `full_text[char_start..char_end]`. Empty for rows
    /// parsed before cells were recorded (their `text` still reads
    /// `name: value; ...`).
    pub values: Vec<CellValue>,
}

/// One cell's value: its zero-based column and its characters in the
/// document's full text (Unicode scalar values).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CellValue {
    pub col: u32,
    pub char_start: u64,
    pub char_end: u64,
}

impl From<&rag_docparse::CellRange> for SheetCells {
    fn from(c: &rag_docparse::CellRange) -> Self {
        SheetCells {
            sheet: c.sheet.clone(),
            first_row: c.first_row,
            first_col: c.first_col,
            last_row: c.last_row,
            last_col: c.last_col,
            values: c.values.iter().map(|v| CellValue { col: v.col, char_start: v.char_start, char_end: v.char_end }).collect(),
        }
    }
}

/// A piece of one line: characters `[char_start, char_end)` of the full
/// text in one box on a page as displayed (see `RawText.pages`).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct LineBox {
    pub page_idx: u32,
    pub char_start: u64,
    pub char_end: u64,
    pub x0: f32,
    pub y0: f32,
    pub x1: f32,
    pub y1: f32,
}

/// A page as displayed (rotation applied, crop box if any): boxes are in
/// its unit, origin at its top-left corner, y downward.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PageSize {
    pub page_idx: u32,
    pub width: f32,
    pub height: f32,
    /// `pt` (PDF points, 1/72 inch) for PDFs and OCR'd pages; Document AI's own unit otherwise.
    pub unit: String,
}

impl From<rag_docparse::PageSize> for PageSize {
    fn from(p: rag_docparse::PageSize) -> Self {
        PageSize { page_idx: p.page_idx, width: p.width, height: p.height, unit: p.unit }
    }
}

impl From<SegmentRow> for Segment {
    fn from(r: SegmentRow) -> Self {
        let boxes = r
            .boxes
            .0
            .iter()
            .map(|f| LineBox {
                page_idx: f.page_idx,
                char_start: f.char_start,
                char_end: f.char_end,
                x0: f.rect.x0,
                y0: f.rect.y0,
                x1: f.rect.x1,
                y1: f.rect.y1,
            })
            .collect();
        let cells = r.cells.map(|c| c.0);
        Segment {
            segment_index: r.segment_index,
            page_idx: r.page_idx,
            char_start: r.char_start,
            char_end: r.char_end,
            text: r.text,
            line_start: r.line_start,
            line_end: r.line_end,
            boxes,
            cell_range: cells.as_ref().map(rag_docparse::CellRange::label),
            header_row: cells.as_ref().is_some_and(|c| c.header),
            cells: cells.as_ref().map(SheetCells::from),
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RawText {
    pub document_id: Uuid,
    pub workspace_id: String,
    /// parsed, chunked or ingested.
    #[schema(value_type = String, example = "ingested")]
    pub status: DocumentStatus,
    /// The pages the segments' boxes are on; empty for formats without pages.
    pub pages: Vec<PageSize>,
    pub segments: Vec<Segment>,
    /// The revision these segments are (`?revision=` asked for it, else the
    /// one search reads). A citation names the revision it quoted.
    pub revision: i32,
    /// The revision search reads now, when it is newer than this one: the
    /// text shown was changed since (an earlier answer's citation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newer_revision: Option<i32>,
}

/// What a reading view was drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReadingFormat {
    Markdown,
    Html,
}

/// A document as its author structured it (`GET …/reading`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ReadingView {
    pub document_id: Uuid,
    /// The revision drawn (as the raw text's `revision`).
    pub revision: i32,
    pub format: ReadingFormat,
    /// The view: elements `{"tag": "h2", "children": [...]}` (tags:
    /// h1-h6, p, div, ul, ol, li, blockquote, pre, code, em, strong, del,
    /// a with `href`, table, thead, tbody, tr, th, td, hr, br, span; `start`
    /// on an ordered list not starting at 1) and texts `{"text": "...",
    /// "at": 120}` (`at` absent: shown, never part of a citation).
    #[schema(value_type = Vec<Object>)]
    pub blocks: Vec<rag_reading::Node>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateConversation {
    /// Optional, up to 200 characters.
    #[schema(max_length = 200)]
    pub title: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Conversation {
    pub id: Uuid,
    pub workspace_id: String,
    pub title: Option<String>,
    pub created_by: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl From<ConversationRow> for Conversation {
    fn from(r: ConversationRow) -> Self {
        Conversation { id: r.id, workspace_id: r.workspace_id, title: r.title, created_by: r.created_by, created_at: r.created_at }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ConversationList {
    pub conversations: Vec<Conversation>,
    /// Where the next page starts (`?cursor=`); absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ConversationWithMessages {
    pub id: Uuid,
    pub workspace_id: String,
    pub title: Option<String>,
    pub created_by: Option<String>,
    pub created_at: DateTime<Utc>,
    /// Oldest first.
    pub messages: Vec<Message>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PostMessage {
    /// The question, 1-8000 characters (`question::MAX_QUESTION_CHARS`; the
    /// schema attribute takes a literal), no control characters but line
    /// breaks and tabs.
    #[schema(min_length = 1, max_length = 8000)]
    pub content: String,
    /// Chunks to retrieve (default: the server's RETRIEVAL_TOP_K).
    #[schema(minimum = 1, maximum = 50)]
    pub top_k: Option<i32>,
    /// Only these documents of the workspace.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub document_ids: Vec<Uuid>,
}

/// A message; an assistant message's metadata holds `sections` (each with
/// its `citations`), the flat `citations`, `llm_usage`, `mode`,
/// `abstained` and, when failed, `failure`. A citation of a spreadsheet
/// carries `cell_range`, the sheet and cells of its rows (`Doanh thu!A5:D5`).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Message {
    pub id: Uuid,
    pub conversation_id: Uuid,
    pub workspace_id: String,
    /// user or assistant.
    pub role: String,
    pub content: String,
    /// pending, done or failed.
    #[schema(value_type = String, example = "done")]
    pub status: MessageStatus,
    /// An answer saying the documents do not answer the question (no citations).
    pub abstained: bool,
    #[schema(value_type = Object)]
    pub metadata: serde_json::Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<MessageRow> for Message {
    fn from(r: MessageRow) -> Self {
        let abstained = r.answer().abstained;
        Message {
            id: r.id,
            conversation_id: r.conversation_id,
            workspace_id: r.workspace_id,
            role: r.role,
            content: r.content,
            status: r.status,
            abstained,
            metadata: r.metadata,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// The answer to posting a question (seed 004's sequence): the user's
/// message and the pending assistant message the answer will complete.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MessagesAccepted {
    pub user_message: Message,
    pub assistant_message: Message,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// ok / ready / unavailable.
    pub status: String,
    /// Per dependency: `ok` or what failed.
    #[schema(value_type = Object)]
    pub checks: serde_json::Map<String, serde_json::Value>,
}

/// A folder or an S3 prefix to follow: exactly one of the two.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewSource {
    /// An absolute folder path on the server, under one it allows (`SOURCE_FOLDER_ROOTS`).
    #[schema(max_length = 4096)]
    pub folder: Option<String>,
    /// `s3://bucket/prefix` of a bucket the server allows (`SOURCE_S3_BUCKETS`).
    #[schema(max_length = 1100)]
    pub s3: Option<String>,
}

/// A source a workspace follows and its last sync.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Source {
    pub id: Uuid,
    pub workspace_id: String,
    /// `folder` or `s3`.
    pub kind: String,
    /// The folder's path, or `s3://bucket/prefix`.
    pub location: String,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    /// A sync of it is running in this server now.
    pub syncing: bool,
    pub sync_started_at: Option<DateTime<Utc>>,
    /// When the last sync that went through every file ended.
    pub sync_completed_at: Option<DateTime<Utc>>,
    /// Why the last sync stopped short (the next one goes on from there).
    pub last_error: Option<String>,
    /// The last complete sync: files listed, and what it did with them.
    pub files_seen: i32,
    pub files_added: i32,
    pub files_changed: i32,
    pub files_removed: i32,
    pub files_failed: i32,
}

impl Source {
    pub(crate) fn from_row(r: rag_store::sources::SourceRow, state: &crate::AppState) -> Source {
        Source {
            syncing: state.is_syncing(r.id),
            id: r.id,
            workspace_id: r.workspace_id,
            kind: r.kind,
            location: r.location,
            created_by: r.created_by,
            created_at: r.created_at,
            sync_started_at: r.sync_started_at,
            sync_completed_at: r.sync_completed_at,
            last_error: r.last_error,
            files_seen: r.files_seen,
            files_added: r.files_added,
            files_changed: r.files_changed,
            files_removed: r.files_removed,
            files_failed: r.files_failed,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SourceList {
    pub sources: Vec<Source>,
}

/// A file a source has seen.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SourceFile {
    /// The path under the folder, or the key under the prefix.
    pub key: String,
    /// `present` (a document), `removed` (its document deleted) or `failed` (refused: `failure` says why).
    pub state: String,
    pub document_id: Uuid,
    /// The document's revision announced for it (0: none yet).
    pub revision: i32,
    pub size_bytes: Option<i64>,
    /// Why it was refused: `unsupported_type`, `too_large`, `empty`, `quota_exceeded` or `unreadable`.
    pub failure_code: Option<String>,
    /// The same in a sentence, with its figures.
    pub failure: Option<String>,
}

impl From<rag_store::sources::SourceFileRow> for SourceFile {
    fn from(r: rag_store::sources::SourceFileRow) -> Self {
        SourceFile {
            key: r.key,
            state: r.state,
            document_id: r.document_id,
            revision: r.revision,
            size_bytes: r.size_bytes,
            failure_code: r.failure_code,
            failure: r.failure,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SourceFiles {
    pub files: Vec<SourceFile>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SyncStarted {
    pub source_id: Uuid,
    /// Always true: the sync runs in the background.
    pub syncing: bool,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SourceRemoved {
    pub source_id: Uuid,
    pub documents_deleted: usize,
}
