//! What the product did: uploads, ingestions, answers, the search index, stuck items, HTTP.

use std::time::Duration;

use metrics::{counter, gauge, histogram};
use tracing::{debug, info, warn};

use super::labels::*;
use super::InternalEvent;
use crate::catalog::names;

/// A file was uploaded (stored and announced) by the CLI or the API, or failed to be.
pub struct UploadRecorded<'a> {
    pub workspace_id: &'a str,
    pub filename: &'a str,
    /// The new document's id, when it was stored.
    pub document_id: Option<&'a str>,
    pub error: Option<&'a str>,
    /// Spent storing the original (or finding it stored).
    pub store: Duration,
    /// Spent announcing it on the broker.
    pub produce: Duration,
}

impl InternalEvent for UploadRecorded<'_> {
    fn emit(self) {
        match self.error {
            None => info!(workspace_id = %self.workspace_id, document_id = %self.document_id.unwrap_or(""), filename = %self.filename,
                store_ms = self.store.as_millis() as u64, produce_ms = self.produce.as_millis() as u64, "upload recorded"),
            Some(e) => warn!(workspace_id = %self.workspace_id, filename = %self.filename, error = %e, "upload failed"),
        }
        let outcome = if self.error.is_none() { "ok" } else { "failed" };
        counter!(names::UPLOADS, OUTCOME => outcome).increment(1);
    }
}

/// A document was ingested for the first time (not a re-chunking replay).
pub struct FirstIngestion {
    pub since_upload: Duration,
}

impl InternalEvent for FirstIngestion {
    fn emit(self) {
        histogram!(names::UPLOAD_TO_INGESTED_SECONDS).record(self.since_upload.as_secs_f64());
    }
}

/// The answerer produced an answer to a question (the log line and the
/// latency histogram; the durable record is the `AnswerProduced` event of
/// `rag-events`, a different thing, hence a different name).
pub struct QuestionAnswered<'a> {
    pub workspace_id: &'a str,
    pub conversation_id: &'a str,
    pub mode: &'a str,
    pub sections: usize,
    /// From the question's event time to the answer's.
    pub since_question: Duration,
}

impl InternalEvent for QuestionAnswered<'_> {
    fn emit(self) {
        info!(workspace_id = %self.workspace_id, conversation_id = %self.conversation_id, mode = %self.mode, sections = self.sections,
            seconds = self.since_question.as_secs_f64(), "question answered");
        histogram!(names::QUESTION_TO_ANSWER_SECONDS, MODE => self.mode.to_string()).record(self.since_question.as_secs_f64());
    }
}

/// Tokens one LLM call used.
pub struct LlmTokensUsed<'a> {
    pub model: &'a str,
    pub prompt: i64,
    pub completion: i64,
}

impl InternalEvent for LlmTokensUsed<'_> {
    fn emit(self) {
        for (kind, n) in [("prompt", self.prompt), ("completion", self.completion)] {
            counter!(names::LLM_TOKENS, "model" => self.model.to_string(), KIND => kind).increment(n.max(0) as u64);
        }
    }
}

/// The chunker found sentences in a document written to the model ("Ignore
/// all previous instructions…"): counted, and logged with the document so
/// an operator can find it.
pub struct InstructionsFound<'a> {
    pub workspace_id: &'a str,
    pub document_id: &'a str,
    pub sentences: usize,
}

impl InternalEvent for InstructionsFound<'_> {
    fn emit(self) {
        tracing::warn!(
            workspace_id = self.workspace_id,
            document_id = self.document_id,
            sentences = self.sentences,
            "the document holds sentences written to the model; they are kept out of answers"
        );
        counter!(names::INSTRUCTIONS_FOUND).increment(self.sentences as u64);
    }
}

/// A workspace's in-memory search index caught up with the read models.
pub struct SearchIndexRefreshed<'a> {
    pub workspace_id: &'a str,
    /// A full load (first query, or the read models were truncated).
    pub full: bool,
    pub documents: usize,
    pub chunks: usize,
    pub elapsed: Duration,
    /// Postings every workspace index of the process holds, after it.
    pub process_postings: usize,
}

impl InternalEvent for SearchIndexRefreshed<'_> {
    fn emit(self) {
        let kind = if self.full { "full" } else { "changes" };
        if self.full {
            info!(workspace_id = %self.workspace_id, documents = self.documents, chunks = self.chunks,
                seconds = self.elapsed.as_secs_f64(), "search index loaded");
        } else {
            debug!(workspace_id = %self.workspace_id, documents = self.documents, chunks = self.chunks,
                seconds = self.elapsed.as_secs_f64(), "search index caught up");
        }
        histogram!(names::SEARCH_INDEX_REFRESH_SECONDS, KIND => kind).record(self.elapsed.as_secs_f64());
        gauge!(names::SEARCH_INDEX_POSTINGS).set(self.process_postings as f64);
    }
}

/// Documents or messages in a non-terminal state for longer than the threshold.
pub struct StuckItems {
    /// "document" or "message".
    pub kind: &'static str,
    pub count: i64,
}

impl InternalEvent for StuckItems {
    fn emit(self) {
        if self.count > 0 {
            warn!(kind = %self.kind, count = self.count, "items stuck in a non-terminal state");
        }
        gauge!(names::STUCK, KIND => self.kind).set(self.count as f64);
    }
}

/// The API answered an HTTP request.
pub struct HttpRequestAnswered<'a> {
    pub method: &'a str,
    /// The matched route template, never the raw path (bounded cardinality).
    pub route: &'a str,
    pub status: u16,
    pub elapsed: Duration,
}

impl InternalEvent for HttpRequestAnswered<'_> {
    fn emit(self) {
        counter!(names::HTTP_REQUESTS, "method" => self.method.to_string(), "route" => self.route.to_string(),
            "status" => self.status.to_string())
        .increment(1);
        histogram!(names::HTTP_SECONDS, "method" => self.method.to_string(), "route" => self.route.to_string())
            .record(self.elapsed.as_secs_f64());
    }
}

/// How many event streams (or uploads) the API holds open at once: a soak
/// run checks that every stream a client dropped is released.
pub struct HttpInFlight {
    /// "stream" or "upload".
    pub kind: &'static str,
    pub count: usize,
}

impl InternalEvent for HttpInFlight {
    fn emit(self) {
        gauge!(names::HTTP_IN_FLIGHT, KIND => self.kind).set(self.count as f64);
    }
}

/// What each source of the deployment has seen (`run all`'s sync loop):
/// per source, and summed over them for the dashboard (files by state, the
/// oldest last complete sync).
pub struct SourcesObserved<'a> {
    /// (source id, seen, present, failed, pending, seconds since its last complete sync)
    pub sources: &'a [(String, i64, i64, i64, i64, f64)],
}

impl InternalEvent for SourcesObserved<'_> {
    fn emit(self) {
        let (mut present, mut failed, mut pending, mut oldest) = (0, 0, 0, 0.0f64);
        for (source, seen, p, f, q, age) in self.sources {
            for (state, n) in [("seen", *seen), ("present", *p), ("failed", *f), ("pending", *q)] {
                gauge!(names::SOURCE_FILES_PER_SOURCE, "source" => source.clone(), "state" => state).set(n as f64);
            }
            gauge!(names::SOURCE_SYNC_AGE_PER_SOURCE, "source" => source.clone()).set(*age);
            present += p;
            failed += f;
            pending += q;
            oldest = oldest.max(*age);
        }
        for (state, n) in [("present", present), ("failed", failed), ("pending", pending)] {
            gauge!(names::SOURCE_FILES, "state" => state).set(n as f64);
        }
        gauge!(names::SOURCE_SYNC_AGE).set(oldest);
    }
}

/// Files still to announce in a sync as it goes (`run all`'s sync loop).
pub struct SourceFilesPending {
    pub files: usize,
}

impl InternalEvent for SourceFilesPending {
    fn emit(self) {
        gauge!(names::SOURCE_FILES, "state" => "pending").set(self.files as f64);
    }
}
