//! The assistant message's metadata from AnswerProduced (v2 and v1), and
//! its stored JSON: every reader reads these keys.

use rag_events::{AnswerProduced, Citation, Envelope, Failure, LlmUsage, Section};
use serde_json::json;

use super::AnswerMetadata;

fn citation(text: Option<&str>) -> Citation {
    Citation {
        source_id: "c1".into(),
        chunk_id: "c1".into(),
        document_id: "d".into(),
        segment_index: 0,
        page_idx: 0,
        char_start: 0,
        char_end: 6,
        snippet_preview: "Hà Nội".into(),
        text: text.map(str::to_string),
        line_start: None,
        line_end: None,
        boxes: Vec::new(),
        cell_range: None,
        revision: 1,
    }
}

fn answer(citations: Vec<Citation>, retrieval_json: &str) -> AnswerProduced {
    AnswerProduced {
        envelope: Envelope::originating("ws", "test@0"),
        conversation_id: "c".into(),
        assistant_message_id: "m".into(),
        answer: "Hà Nội.".into(),
        mode: "extractive".into(),
        abstained: false,
        sections: vec![Section { text: "Hà Nội.".into(), source_ids: vec!["c1".into()], citations: citations.clone() }],
        citations,
        llm_usage: None,
        retrieval_json: retrieval_json.into(),
        failure: None,
    }
}

#[test]
fn the_cited_text_comes_from_the_event_and_v1_events_are_still_read() {
    let v2 = AnswerMetadata::of_event(&answer(vec![citation(Some("Hà Nội"))], "{}"));
    assert_eq!(v2.citations[0].text.as_deref(), Some("Hà Nội"));
    assert_eq!(v2.sections[0].citations[0].text.as_deref(), Some("Hà Nội"));
    // v1: the texts travelled beside the citations, matched by position.
    let v1 = AnswerMetadata::of_event(&answer(vec![citation(None)], r#"{"citation_texts": ["thủ đô"]}"#));
    assert_eq!(v1.citations[0].text.as_deref(), Some("thủ đô"));
    assert_eq!(v1.mode, "extractive");
    // Unreadable diagnostics lose the diagnostics, never the answer.
    let broken = AnswerMetadata::of_event(&answer(vec![citation(Some("Hà Nội"))], "{not json"));
    assert_eq!(broken.sections.len(), 1);
}

/// The JSON every reader reads (the page through the API, `ask`, the
/// OpenAI and MCP doors, the evaluator): renaming a field of the type
/// without meaning to changes it and fails here.
#[test]
fn the_stored_form_is_the_wire_form() {
    let retrieval = json!({
        "query": "Doanh thu năm 2023?", "query_language": "vi", "retrieval_ms": 12,
        "unanswered_parts": ["Còn ngày phép?"], "unanswered_text": "Tài liệu không nói về: Còn ngày phép?",
        "citation_report": {"unfaithful_sections": ["Tăng 38,6%. (not in its citations: 38.6)"], "rejected_sections": ["B."],
                            "rewritten_sections": 1, "verified": true},
        "llm_timings": {"prompt_n": 232},
    });
    let mut e = answer(vec![citation(Some("Hà Nội"))], &retrieval.to_string());
    e.mode = "llm".into();
    e.llm_usage = Some(LlmUsage { model: "qwen".into(), prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 });
    e.failure = Some(Failure { code: "llm_timeout".into(), message: "slow".into() });
    let stored = AnswerMetadata::of_event(&e).to_json();
    let c = json!({"source_id": "c1", "chunk_id": "c1", "document_id": "d", "segment_index": 0, "page_idx": 0, "char_start": 0,
                   "char_end": 6, "snippet_preview": "Hà Nội", "text": "Hà Nội", "line_start": null, "line_end": null, "boxes": [],
                   "cell_range": null, "revision": 1});
    assert_eq!(
        stored,
        json!({
            "mode": "llm", "abstained": false,
            "sections": [{"text": "Hà Nội.", "source_ids": ["c1"], "citations": [c]}],
            "citations": [c],
            "llm_usage": {"model": "qwen", "prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            "retrieval": retrieval,
            "failure": {"code": "llm_timeout", "message": "slow"},
        })
    );
    let read = AnswerMetadata::of_stored(&stored).expect("an answer's metadata");
    assert_eq!(read.to_json(), stored);
    assert_eq!(read.retrieval.unanswered_parts, ["Còn ngày phép?"]);
    assert_eq!(read.withdrawn(), ["Tăng 38,6%. (not in its citations: 38.6)", "B."]);
    assert_eq!(read.retrieval.details["llm_timings"]["prompt_n"], 232);
}

#[test]
fn a_question_or_a_pending_answer_has_no_answer_metadata() {
    assert_eq!(AnswerMetadata::of_stored(&json!({})), None);
    assert_eq!(AnswerMetadata::of_stored(&json!({"top_k": null, "document_ids": [], "asked_by": "u"})), None);
    // Written before `abstained` and `retrieval` existed.
    let old = AnswerMetadata::of_stored(&json!({"mode": "extractive", "sections": [], "citations": []})).expect("old answer");
    assert!(!old.abstained && old.failure.is_none());
}

/// Rows an older projector wrote: `retrieval` null (its JSON did not
/// parse), nulls for absent usage and failure, a typed diagnostic of
/// another type. Each reads as far as it goes; nothing else is lost.
#[test]
fn an_older_or_odd_shape_loses_only_the_field_it_spoils() {
    let c = json!({"source_id": "c1", "chunk_id": "c1", "document_id": "d", "segment_index": 0, "page_idx": 0, "char_start": 0,
                   "char_end": 6, "snippet_preview": "Hà Nội", "text": "Hà Nội"});
    let stored = json!({"mode": "llm", "abstained": false, "sections": [{"text": "Hà Nội.", "source_ids": ["c1"], "citations": [c]}],
                        "citations": [c], "llm_usage": null, "retrieval": null, "failure": null});
    let read = AnswerMetadata::of_stored(&stored).expect("an answer");
    assert_eq!((read.sections.len(), read.citations.len()), (1, 1));
    assert!(read.llm_usage.is_none() && read.failure.is_none() && read.retrieval.details.is_empty());
    // A typed diagnostic of another type stays as written, beside the rest.
    let odd = json!({"mode": "llm", "sections": [], "retrieval": {"unanswered_parts": "Còn ngày phép?", "query_language": "vi",
                     "llm_timings": {"prompt_n": 9}, "citation_report": {"rejected_sections": ["B."], "verified": false}}});
    let read = AnswerMetadata::of_stored(&odd).expect("an answer");
    assert!(read.retrieval.unanswered_parts.is_empty());
    assert_eq!(read.retrieval.details["unanswered_parts"], "Còn ngày phép?");
    assert_eq!(read.retrieval.query_language.as_deref(), Some("vi"));
    assert_eq!(read.withdrawn(), ["B."]);
    assert_eq!(read.to_json()["retrieval"], odd["retrieval"], "written back as it was read");
    // The same from an event whose record has an odd field.
    let e = answer(vec![citation(Some("Hà Nội"))], &odd["retrieval"].to_string());
    assert_eq!(AnswerMetadata::of_event(&e).to_json()["retrieval"], odd["retrieval"]);
}
