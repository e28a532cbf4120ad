//! The message metadata of an answer: what retrieval was asked and what it
//! found, and what grounding did.

use rag_answer::AnswerOutcome;

use crate::retriever::Retrieval;

/// What retrieval was asked.
pub(super) struct Asked<'a> {
    pub(super) query: &'a str,
    /// `question`, `llm` (condensed by the model) or `previous_turn`.
    pub(super) query_source: &'static str,
    /// Condensing, retrieving and reading the chunks' segments.
    pub(super) retrieval_ms: u64,
}

/// What retrieval found, what it was asked, and what grounding did, for
/// the message metadata.
/// `parts`: for a question answered part by part, what each part asked and
/// found (the rest describes the first part, and the whole answer).
pub(super) fn retrieval_json(r: &Retrieval, asked: &Asked<'_>, outcome: Option<&AnswerOutcome>, parts: &[serde_json::Value]) -> String {
    let chunks: Vec<serde_json::Value> = r
        .chunks
        .iter()
        .map(|c| {
            serde_json::json!({
                "chunk_id": c.hit.chunk_id, "document_id": c.hit.document_id, "filename": c.hit.filename,
                "chunking_version": c.hit.chunking_version, "score": c.score, "bm25": c.bm25, "cosine": c.cosine,
                "lexical_rank": c.lexical_rank, "dense_rank": c.dense_rank,
            })
        })
        .collect();
    let mut v = serde_json::json!({
        "mode": r.mode, "query_language": r.query_language, "dense_used": r.dense_used, "chunks": chunks,
        "query": asked.query, "query_source": asked.query_source, "retrieval_ms": asked.retrieval_ms,
    });
    if let Some(restoration) = &r.restoration {
        v["restoration"] = serde_json::to_value(restoration).unwrap_or_default();
    }
    if let Some(fusion) = &r.fusion {
        v["fusion"] = serde_json::to_value(fusion).unwrap_or_default();
    }
    if let Some(rerank) = &r.rerank {
        v["rerank"] = serde_json::to_value(rerank).unwrap_or_default();
    }
    if let Some(o) = outcome {
        v["citation_report"] = serde_json::to_value(&o.report).unwrap_or_default();
        v["llm_error"] = o.llm_error.clone().into();
        v["answer_mode"] = o.mode.as_str().into();
        v["evidence"] = serde_json::json!({"units": o.evidence_units, "chunks": o.evidence_chunks});
        if !o.unanswered_parts.is_empty() {
            // Said after the sections (the page, `ask`), never a section.
            v["unanswered_parts"] = o.unanswered_parts.clone().into();
            v["unanswered_text"] = rag_answer::unanswered_text(&o.unanswered_parts).into();
        }
        v["llm_first_token_ms"] = o.first_token.map(|d| d.as_millis() as u64).into();
        let epoch_ms =
            |t: Option<std::time::SystemTime>| t.and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map(|d| d.as_millis() as u64);
        v["llm_first_token_at_ms"] = epoch_ms(o.first_token_at).into();
        v["llm_first_words_at_ms"] = epoch_ms(o.first_words_at).into();
        v["llm_streamed"] = o.streamed.into();
        v["llm_ms"] = o.llm_elapsed.map(|d| d.as_millis() as u64).into();
        if let Some(t) = &o.timings {
            v["llm_timings"] = t.clone();
        }
    }
    if !parts.is_empty() {
        v["parts"] = parts.to_vec().into();
    }
    v.to_string()
}
