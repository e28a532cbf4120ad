//! The answerer's search for one part of a question (a compound question
//! is answered part by part, `rag_answer::question`): the workspace's index
//! behind `PartRetrieval`, the evidence cutoff, and the question the model
//! reads for it.

use rag_answer::question::{AnsweredPart, PartEvidence, PartRetrieval};
use rag_answer::EvidenceRanker;
use tracing::warn;
use uuid::Uuid;

use super::metadata::Asked;
use super::Answerer;
use crate::error::StageError;
use rag_search::retriever::{Mode, Retrieval};

/// One part of a question, searched and answered.
pub(super) type PartAnswer = AnsweredPart<Retrieval>;

pub(super) fn asked(a: &PartAnswer) -> Asked<'_> {
    Asked { query: &a.query, query_source: a.query_source, retrieval_ms: a.retrieval_ms }
}

/// What the message metadata keeps of each part of a compound question.
pub(super) fn summary(a: &PartAnswer) -> serde_json::Value {
    serde_json::json!({
        "part": a.part, "query": a.query, "query_source": a.query_source, "retrieval_ms": a.retrieval_ms,
        "chunks": a.found.chunks.iter().map(|c| c.hit.chunk_id.clone()).collect::<Vec<_>>(),
        "abstained": a.outcome.as_ref().map(|o| o.abstained),
        "sections": a.outcome.as_ref().map_or(0, |o| o.sections.len()),
        "citation_report": a.outcome.as_ref().map(|o| serde_json::to_value(&o.report).unwrap_or_default()),
    })
}

/// Why a part's search gave no evidence.
pub(super) enum SearchFailed {
    /// A transient failure (the database restarting): the question is
    /// processed again.
    Retry(StageError),
    /// The documents could not be searched: the question is answered
    /// `retrieval_failed`.
    Refused,
}

/// The workspace's search index, as one question searches it.
pub(super) struct IndexSearch<'a> {
    pub(super) answerer: &'a Answerer,
    pub(super) workspace_id: &'a str,
    pub(super) event_id: &'a str,
    pub(super) top_k: usize,
    pub(super) document_ids: &'a [Uuid],
}

impl PartRetrieval for IndexSearch<'_> {
    type Found = Retrieval;
    type Error = SearchFailed;

    async fn retrieve(&self, query: &str) -> Result<PartEvidence<Retrieval>, SearchFailed> {
        let (ws, answerer) = (self.workspace_id, self.answerer);
        let retrieval = match answerer.retriever.retrieve(ws, query, self.top_k, self.document_ids, Mode::Hybrid).await {
            Ok(r) => r,
            Err(e) if e.is_transient() => return Err(SearchFailed::Retry(e.into())),
            Err(e) => {
                // The message is read by the user: the details (hosts,
                // statements) go to the log only.
                warn!(workspace_id = %ws, event_id = %self.event_id, error = %e, "retrieval failed for a question");
                return Err(SearchFailed::Refused);
            }
        };
        let sources = answerer.sources(ws, &retrieval).await.map_err(SearchFailed::Retry)?;
        // A reranker's order is not the fused scores' order, and its own
        // scores are on its own scale: the cutoff applies to fused lists.
        let reranked = retrieval.chunks.iter().any(|c| c.rerank_score.is_some());
        let scores: Vec<f64> = retrieval.chunks.iter().map(|c| c.score).collect();
        let llm_chunks = if reranked { sources.len() } else { rag_answer::evidence::within_best(&scores, answerer.evidence_cutoff) };
        let confidence = rag_answer::RetrievalConfidence {
            best_cosine: retrieval.chunks.iter().filter_map(|c| c.cosine).reduce(f64::max),
            lexical_coverage: retrieval.fusion.as_ref().map(|f| f.lexical_coverage),
        };
        Ok(PartEvidence { sources, llm_chunks, confidence, found: retrieval })
    }

    fn model_question(&self, asked: &str, query_source: &'static str, found: &Retrieval) -> String {
        if self.answerer.retriever.restore_diacritics {
            model_question(asked, query_source, found)
        } else {
            asked.to_string()
        }
    }

    fn ranker<'a>(&'a self, query: &'a str, found: &'a Retrieval) -> Option<Box<dyn EvidenceRanker + Send + 'a>> {
        // Evidence sentences are ranked against what was embedded.
        let ranked_against = found.restoration.as_ref().map_or(query, |r| r.text.as_str());
        Some(Box::new(crate::evidence_ranker::EmbedderRanker { embedder: &self.answerer.retriever.embedder, query: ranked_against }))
    }
}

/// What the model reads as the question: a Vietnamese question typed
/// without marks restored from the workspace's text (the retrieval's
/// restoration when the question was searched as typed; else restored from
/// the chunks found for the condensed query), so the model reads, and
/// answers in, Vietnamese with its marks. Any other question as asked.
fn model_question(question: &str, query_source: &str, retrieval: &Retrieval) -> String {
    if !rag_retrieval::needs_restoration(question) {
        return question.to_string();
    }
    match (&retrieval.restoration, query_source) {
        (Some(r), "question") => r.text.clone(),
        _ => rag_retrieval::restore_diacritics(question, retrieval.chunks.iter().map(|c| c.hit.content.as_str())).text,
    }
}
