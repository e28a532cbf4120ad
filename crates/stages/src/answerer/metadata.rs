//! The message metadata of an answer: what retrieval was asked and what it
//! found, and what grounding did.

use rag_answer::{AnswerOutcome, CitationReport};
use rag_store::messages::{AnswerDiagnostics, HeldBack};

use rag_search::retriever::Retrieval;

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
    // The fields the doors show are the type's own; the rest, details.
    let mut d = AnswerDiagnostics {
        query: Some(asked.query.to_string()),
        query_language: serde_json::to_value(r.query_language).ok().and_then(|v| v.as_str().map(str::to_string)),
        ..AnswerDiagnostics::default()
    };
    let mut v = serde_json::json!({
        "mode": r.mode, "dense_used": r.dense_used, "chunks": chunks,
        "query_source": asked.query_source, "retrieval_ms": asked.retrieval_ms,
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
        d.citation_report = Some(held_back(&o.report));
        v["llm_error"] = o.llm_error.clone().into();
        v["answer_mode"] = o.mode.as_str().into();
        v["evidence"] = serde_json::json!({"units": o.evidence_units, "chunks": o.evidence_chunks});
        if !o.unanswered_parts.is_empty() {
            // Said after the sections (the page, `ask`), never a section.
            d.unanswered_parts = o.unanswered_parts.clone();
            d.unanswered_text = Some(rag_answer::unanswered_text(&o.unanswered_parts));
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
    if let serde_json::Value::Object(details) = v {
        d.details = details;
    }
    serde_json::to_string(&d).unwrap_or_default()
}

/// The check's report as the message metadata holds it: the fields the
/// doors show typed, the rest as written.
pub(super) fn held_back(report: &CitationReport) -> HeldBack {
    serde_json::to_value(report).map(|v| HeldBack::read(&v)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer crate's report and the store's view of it name the same
    /// fields: what the page and `ask` show as withdrawn is what the check
    /// took back.
    #[test]
    fn the_report_the_doors_show_is_the_one_the_check_wrote() {
        let report = CitationReport {
            unfaithful_sections: vec!["Tăng 38,6%. (not in its citations: 38.6)".into()],
            rejected_sections: vec!["Employees are paid 300% for overtime on public holidays.".into()],
            rewritten_sections: 2,
            verify_score: Some(0.4),
            ..CitationReport::default()
        };
        let h = held_back(&report);
        assert_eq!(h.unfaithful_sections, report.unfaithful_sections);
        assert_eq!(h.rejected_sections, report.rejected_sections);
        assert_eq!(h.rewritten_sections, 2);
        assert_eq!(h.details["verify_score"], 0.4);
        let back: CitationReport = AnswerDiagnostics { citation_report: Some(h), ..AnswerDiagnostics::default() }.citation_report_as();
        assert_eq!(back, report);
    }
}
