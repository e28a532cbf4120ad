//! The assistant message's metadata from AnswerProduced, v2 and v1.

use rag_events::{AnswerProduced, Citation, Envelope, Section};

use crate::projector::answer_metadata;

fn citation(text: Option<&str>) -> Citation {
    Citation {
        source_id: "c1".into(),
        chunk_id: "c1".into(),
        document_id: "d".into(),
        segment_index: 0,
        page_idx: 0,
        char_start: 0,
        char_end: 5,
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
    let v2 = answer_metadata(&answer(vec![citation(Some("Hà Nội"))], "{}"));
    assert_eq!(v2["citations"][0]["text"], "Hà Nội");
    assert_eq!(v2["sections"][0]["citations"][0]["text"], "Hà Nội");
    // v1: the texts travelled beside the citations, matched by position.
    let v1 = answer_metadata(&answer(vec![citation(None)], r#"{"citation_texts": ["thủ đô"]}"#));
    assert_eq!(v1["citations"][0]["text"], "thủ đô");
    assert_eq!(v1["mode"], "extractive");
}
