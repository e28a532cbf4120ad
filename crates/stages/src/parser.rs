//! The parser stage: DocumentUploaded -> DocumentParsed.
//!
//! Kafka -> Kafka, at-least-once: the output is produced (delivery awaited)
//! before the input offset is stored. A bad document is not an error of the
//! stage: it yields DocumentParsed with a failure, which marks the document
//! failed with its reason.
//!
//! Parsing runs in a child process ([`crate::parse_worker`]) unless
//! `PARSER_ISOLATION=none`. A document that kills its parser (or runs out
//! its time) also yields DocumentParsed with a failure, and its event goes
//! to the dead-letter topic. Attempts are counted in Postgres before each
//! try, so a document that takes the whole process down (in-process
//! parsing, or a kill at the wrong moment) is dead-lettered after
//! `max_attempts` instead of taking it down on every restart.

use rag_blobs::BlobStore;
use rag_bus::{FailureCode, Inbound, Outcome, Positions, ProcessError, Stage, StageIdentity, StageOutput};
use rag_docparse::{Limits, ParseError, ParsedDocument};
use rag_events::{DocumentParsed, DocumentUploaded, Envelope, EventType, Failure};
use rag_store::sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::common::*;
use crate::error::StageError;
use crate::parse_worker::{ParseWorkers, WorkOutcome, WorkerError};

pub const STAGE: &str = "parser";
pub const GROUP: &str = "rag-parser";

pub fn identity() -> StageIdentity {
    StageIdentity {
        name: STAGE,
        group: GROUP.into(),
        consumes: vec![EventType::DocumentUploaded],
        produces: vec![EventType::DocumentParsed],
        positions: Positions::Kafka,
        max_in_flight: None,
    }
}

pub struct Parser {
    pub blobs: BlobStore,
    pub output: StageOutput,
    pub limits: Limits,
    /// Recogniser for PDF pages without a text layer; None: such pages are
    /// reported in `pages_without_text`.
    pub ocr: Option<std::sync::Arc<crate::ocr::TesseractOcr>>,
    /// Where documents are parsed: child processes, or None for this
    /// process (`PARSER_ISOLATION=none`: only for trusted input).
    pub workers: Option<ParseWorkers>,
    /// The attempts per event (`parse_attempts`).
    pub pool: PgPool,
    /// Tries of one document before it is dead-lettered as `parser_crashed`.
    pub max_attempts: u32,
    /// The process's shutdown: a parse in progress is stopped (its worker
    /// killed) and the event is parsed again after the restart.
    pub shutdown: CancellationToken,
}

/// How one event was handled.
enum Handled {
    /// Parsed, or refused by the parser: the document's outcome.
    Judged(DocumentParsed),
    /// The parser died on it (or gave up after too many attempts): the
    /// document's failure, and a dead letter with the same code.
    Crashed(DocumentParsed, FailureCode, String),
}

impl Parser {
    fn parsed(&self, input: &DocumentUploaded) -> DocumentParsed {
        DocumentParsed {
            envelope: Envelope::caused_by(&input.envelope, STAGE, producer_name(STAGE)),
            document_id: input.document_id.clone(),
            parser_name: rag_docparse::PARSER_NAME.to_string(),
            parser_version: rag_docparse::PARSER_VERSION.to_string(),
            page_count: None,
            segment_count: None,
            char_count: None,
            full_text_uri: None,
            full_text_sha256: None,
            segments_uri: None,
            segments_sha256: None,
            failure: None,
            pages_without_text: Vec::new(),
            ocr_pages: Vec::new(),
            line_count: None,
            pages: Vec::new(),
            revision: input.revision,
        }
    }

    async fn run(&self, input: &DocumentUploaded) -> Result<Handled, StageError> {
        let out = self.parsed(input);
        let fail = |mut out: DocumentParsed, code: &str, message: String| {
            out.failure = Some(Failure { code: code.to_string(), message });
            Ok(Handled::Judged(out))
        };
        if input.size_bytes as u64 > self.limits.max_bytes {
            let e = ParseError::TooLarge { size: input.size_bytes as u64, limit: self.limits.max_bytes };
            return fail(out, e.code(), e.to_string());
        }
        // Remembered before trying: a try that takes the process down
        // still counts.
        let event_id = &input.envelope.event_id;
        let attempts = rag_store::parse_attempts::begin(&self.pool, event_id).await?;
        if attempts as u32 > self.max_attempts.max(1) {
            let message = format!("the parser stopped on this document {} times; it is not tried again", attempts - 1);
            return Ok(crashed(out, FailureCode::ParserCrashed, message));
        }
        // An original that cannot be read is the document's failure, not
        // the stage's: it is marked failed with the reason.
        let bytes = match fetch_verified(&self.blobs, &input.blob_uri, Some(&input.sha256)).await.map_err(ProcessError::from) {
            Ok(b) => b,
            Err(ProcessError::Permanent { code, reason, .. }) => return fail(out, code.as_str(), reason),
            Err(e) => {
                // Not a try: the parser never saw it.
                rag_store::parse_attempts::interrupted(&self.pool, event_id).await?;
                return Err(e.into());
            }
        };
        let parsed = match &self.workers {
            Some(workers) => {
                let ocr = self.ocr.as_deref();
                match workers.parse(&bytes, &input.content_type, &input.filename, &self.limits, ocr, &self.shutdown).await {
                    Ok(WorkOutcome::Parsed(doc)) => Ok(*doc),
                    Ok(WorkOutcome::Refused { code, message }) => Err((code, message)),
                    Ok(WorkOutcome::Crashed { code, message }) => return Ok(crashed(out, code, message)),
                    // Killed by someone else (the host's OOM killer, an
                    // operator): it may not be this document's doing, so it
                    // is tried again, and the attempt stays counted.
                    Err(e @ WorkerError::Killed) => return Err(ProcessError::transient_from(e).into()),
                    Err(WorkerError::Interrupted) => {
                        rag_store::parse_attempts::interrupted(&self.pool, event_id).await?;
                        return Err(ProcessError::transient("shutting down in the middle of parsing").into());
                    }
                    Err(e @ WorkerError::Spawn { .. }) => {
                        rag_store::parse_attempts::interrupted(&self.pool, event_id).await?;
                        return Err(ProcessError::transient_from(e).into());
                    }
                }
            }
            None => {
                let (content_type, filename, limits, ocr) =
                    (input.content_type.clone(), input.filename.clone(), self.limits.clone(), self.ocr.clone());
                // Parsing (and OCR) is CPU work: keep it off the async workers.
                tokio::task::spawn_blocking(move || {
                    let ocr = ocr.as_deref().map(|o| o as &dyn rag_docparse::PageOcr);
                    rag_docparse::parse_with_ocr(&bytes, &content_type, &filename, &limits, ocr)
                })
                .await
                .map_err(|source| StageError::Crashed { code: FailureCode::ParserCrashed, source })?
                .map_err(|e| (e.code().to_string(), e.to_string()))
            }
        };
        // The parser came back: this try is over and was not a crash. What
        // follows (storing, producing) may fail and be retried, which must
        // not count as another try.
        rag_store::parse_attempts::finished(&self.pool, event_id).await?;
        match parsed {
            Ok(doc) => self.stored(input, out, doc).await.map(Handled::Judged),
            Err((code, message)) => fail(out, &code, message),
        }
    }

    /// The parsed document's text and segments stored, and the event that
    /// says where.
    async fn stored(&self, input: &DocumentUploaded, mut out: DocumentParsed, doc: ParsedDocument) -> Result<DocumentParsed, StageError> {
        let (ws_id, doc_id) = (&input.envelope.workspace_id, &input.document_id);
        for (page, why) in &doc.ocr_failures {
            warn!(workspace_id = %ws_id, document_id = %doc_id, page, reason = %why, "OCR failed for a page");
        }
        if !doc.ocr_pages.is_empty() {
            info!(workspace_id = %ws_id, document_id = %doc_id, pages = ?doc.ocr_pages, "pages read by OCR");
        }
        if !doc.pages_without_text.is_empty() {
            warn!(workspace_id = %ws_id, document_id = %doc_id, pages = ?doc.pages_without_text, ocr = self.ocr.is_some(),
                  "pages without text: marked as such, their content is not searchable");
        }
        let ws = &input.envelope.workspace_id;
        let segments_json = serde_json::to_vec(&doc.segments).map_err(|e| StageError::invalid(FailureCode::Encode, e))?;
        let (text_uri, text_sha) = store_derived(
            &self.blobs,
            ws,
            &input.document_id,
            "text",
            "txt",
            doc.full_text.clone().into_bytes(),
            "text/plain; charset=utf-8",
        )
        .await?;
        let (seg_uri, seg_sha) =
            store_derived(&self.blobs, ws, &input.document_id, "segments", "json", segments_json, "application/json").await?;
        out.page_count = Some(doc.page_count as i32);
        out.segment_count = Some(doc.segments.len() as i32);
        out.char_count = Some(doc.char_count() as i64);
        out.full_text_uri = Some(text_uri);
        out.full_text_sha256 = Some(text_sha);
        out.segments_uri = Some(seg_uri);
        out.segments_sha256 = Some(seg_sha);
        out.pages_without_text = doc.pages_without_text.iter().map(|p| *p as i32).collect();
        out.ocr_pages = doc.ocr_pages.iter().map(|p| *p as i32).collect();
        out.line_count = Some(1 + doc.full_text.matches('\n').count() as i64);
        out.pages = doc
            .pages
            .iter()
            .map(|p| rag_events::PageSize { page_idx: p.page_idx as i32, width: p.width, height: p.height, unit: p.unit.clone() })
            .collect();
        Ok(out)
    }
}

fn crashed(mut out: DocumentParsed, code: FailureCode, message: String) -> Handled {
    out.failure = Some(Failure { code: code.as_str().to_string(), message: message.clone() });
    Handled::Crashed(out, code, message)
}

impl Stage for Parser {
    type Error = StageError;

    fn identity(&self) -> StageIdentity {
        identity()
    }

    async fn process(&self, msg: &Inbound) -> Result<Outcome, StageError> {
        let input: DocumentUploaded = decode(self.output.codec(), msg)?;
        let (ws, doc) = (&input.envelope.workspace_id, &input.document_id);
        let (out, outcome) = match self.run(&input).await? {
            Handled::Judged(out) => (out, Outcome::Applied),
            Handled::Crashed(out, code, reason) => (out, Outcome::DeadLetter { code, reason }),
        };
        match &out.failure {
            Some(f) => warn!(workspace_id = %ws, document_id = %doc, code = %f.code, reason = %f.message, "document could not be parsed"),
            None => info!(workspace_id = %ws, document_id = %doc, pages = out.page_count, segments = out.segment_count, "document parsed"),
        }
        self.output.send(&out).await?;
        rag_store::parse_attempts::finished(&self.pool, &input.envelope.event_id).await?;
        Ok(outcome)
    }
}
