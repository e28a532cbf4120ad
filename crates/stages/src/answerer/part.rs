//! One part of a question (a compound question is answered part by part),
//! searched and answered, and the question the model reads for it.

use rag_answer::AnswerOutcome;

use super::metadata::Asked;
use rag_search::retriever::Retrieval;

/// One part of a question, searched and answered.
pub(super) struct PartAnswer {
    pub(super) part: String,
    pub(super) query: String,
    pub(super) query_source: &'static str,
    pub(super) retrieval_ms: u64,
    pub(super) retrieval: Retrieval,
    /// None: the model failed (and the fallback is to fail).
    pub(super) outcome: Option<AnswerOutcome>,
}

impl PartAnswer {
    pub(super) fn asked(&self) -> Asked<'_> {
        Asked { query: &self.query, query_source: self.query_source, retrieval_ms: self.retrieval_ms }
    }

    /// What the message metadata keeps of each part of a compound question.
    pub(super) fn summary(&self) -> serde_json::Value {
        serde_json::json!({
            "part": self.part, "query": self.query, "query_source": self.query_source, "retrieval_ms": self.retrieval_ms,
            "chunks": self.retrieval.chunks.iter().map(|c| c.hit.chunk_id.clone()).collect::<Vec<_>>(),
            "abstained": self.outcome.as_ref().map(|o| o.abstained),
            "sections": self.outcome.as_ref().map_or(0, |o| o.sections.len()),
            "citation_report": self.outcome.as_ref().map(|o| serde_json::to_value(&o.report).unwrap_or_default()),
        })
    }
}

/// What the model reads as the question: a Vietnamese question typed
/// without marks restored from the workspace's text (the retrieval's
/// restoration when the question was searched as typed; else restored from
/// the chunks found for the condensed query), so the model reads, and
/// answers in, Vietnamese with its marks. Any other question as asked.
pub(super) fn model_question(question: &str, query_source: &str, retrieval: &Retrieval) -> String {
    if !rag_retrieval::needs_restoration(question) {
        return question.to_string();
    }
    match (&retrieval.restoration, query_source) {
        (Some(r), "question") => r.text.clone(),
        _ => rag_retrieval::restore_diacritics(question, retrieval.chunks.iter().map(|c| c.hit.content.as_str())).text,
    }
}
