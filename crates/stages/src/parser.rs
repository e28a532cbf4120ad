//! The parser stage: DocumentUploaded -> DocumentParsed.
//!
//! Kafka -> Kafka, at-least-once: the output is produced (delivery awaited)
//! before the input offset is stored. A bad document is not an error of the
//! stage: it yields DocumentParsed with a failure, which marks the document
//! failed with its reason.

use rag_blobs::BlobStore;
use rag_bus::{Inbound, Outcome, Positions, ProcessError, Stage, StageIdentity, StageOutput};
use rag_docparse::{Limits, ParseError};
use rag_events::{DocumentParsed, DocumentUploaded, Envelope, EventType, Failure};
use tracing::{info, warn};

use crate::common::*;
use crate::error::StageError;

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
        }
    }

    async fn run(&self, input: &DocumentUploaded) -> Result<DocumentParsed, StageError> {
        let mut out = self.parsed(input);
        let fail = |mut out: DocumentParsed, code: &str, message: String| {
            out.failure = Some(Failure { code: code.to_string(), message });
            Ok(out)
        };
        if input.size_bytes as u64 > self.limits.max_bytes {
            let e = ParseError::TooLarge { size: input.size_bytes as u64, limit: self.limits.max_bytes };
            return fail(out, e.code(), e.to_string());
        }
        // An original that cannot be read is the document's failure, not
        // the stage's: it is marked failed with the reason.
        let bytes = match fetch_verified(&self.blobs, &input.blob_uri, Some(&input.sha256)).await.map_err(ProcessError::from) {
            Ok(b) => b,
            Err(ProcessError::Permanent { code, reason, .. }) => return fail(out, &code, reason),
            Err(e) => return Err(e.into()),
        };
        let (content_type, filename, limits) = (input.content_type.clone(), input.filename.clone(), self.limits.clone());
        let ocr = self.ocr.clone();
        // Parsing (and OCR) is CPU work: keep it off the async workers.
        let parsed = tokio::task::spawn_blocking(move || {
            let ocr = ocr.as_deref().map(|o| o as &dyn rag_docparse::PageOcr);
            rag_docparse::parse_with_ocr(&bytes, &content_type, &filename, &limits, ocr)
        })
        .await
        .map_err(|source| StageError::Crashed { code: "parser_crashed", source })?;
        let doc = match parsed {
            Ok(d) => d,
            Err(e) => return fail(out, e.code(), e.to_string()),
        };
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
        let segments_json = serde_json::to_vec(&doc.segments).map_err(|e| StageError::invalid("encode", e))?;
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

impl Stage for Parser {
    type Error = StageError;

    fn identity(&self) -> StageIdentity {
        identity()
    }

    async fn process(&self, msg: &Inbound) -> Result<Outcome, StageError> {
        let input: DocumentUploaded = decode(self.output.codec(), msg)?;
        let out = self.run(&input).await?;
        match &out.failure {
            Some(f) => warn!(workspace_id = %input.envelope.workspace_id, document_id = %input.document_id,
                             code = %f.code, reason = %f.message, "document could not be parsed"),
            None => info!(workspace_id = %input.envelope.workspace_id, document_id = %input.document_id,
                          pages = out.page_count, segments = out.segment_count, "document parsed"),
        }
        self.output.send(&out).await?;
        Ok(Outcome::Applied)
    }
}
