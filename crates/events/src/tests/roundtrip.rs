use std::collections::HashMap;

use crate::*;

fn env() -> Envelope {
    Envelope::originating("ws-1", "test@0")
}

fn citation() -> Citation {
    Citation {
        source_id: "chunk-abc".into(),
        chunk_id: "chunk-abc".into(),
        document_id: uuid::Uuid::new_v4().to_string(),
        segment_index: 3,
        page_idx: 1,
        char_start: 10,
        char_end: 42,
        snippet_preview: "Doanh thu tăng 12%".into(),
        text: Some("Doanh thu tăng 12% so với năm trước, đạt 1.245 tỷ".into()),
        line_start: Some(3),
        line_end: Some(4),
        boxes: vec![crate::PageBox { page_idx: 1, x0: 56.0, y0: 91.2, x1: 355.9, y1: 104.0 }],
        cell_range: Some("Doanh thu!A5:D5".into()),
        revision: 1,
    }
}

fn doc_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn roundtrip<E: Event + PartialEq + std::fmt::Debug + Clone>(codec: &Codec, event: E) {
    let bytes = codec.encode(&event).unwrap();
    assert_eq!(&bytes[..2], &[0xC3, 0x01]);
    let back: E = codec.decode(&bytes).unwrap();
    assert_eq!(back, event);
    let any = codec.decode_any(&bytes).unwrap();
    assert_eq!(any.event_type(), E::TYPE);
    assert_eq!(any.envelope(), event.envelope());
}

#[test]
fn every_event_roundtrips() {
    let codec = Codec::embedded().unwrap();
    let mut metadata = HashMap::new();
    metadata.insert("source".to_string(), "crm".to_string());
    roundtrip(
        &codec,
        DocumentUploaded {
            envelope: env(),
            document_id: doc_id(),
            blob_uri: "s3://b/k".into(),
            filename: "báo cáo.pdf".into(),
            content_type: "application/pdf".into(),
            size_bytes: 1234,
            sha256: "ab".repeat(32),
            uploaded_by: "user-1".into(),
            metadata,
            revision: 3,
            replaces_sha256: Some("ab".repeat(32)),
        },
    );
    let parsed_ok = DocumentParsed {
        envelope: env(),
        document_id: doc_id(),
        parser_name: "docparse".into(),
        parser_version: "1".into(),
        page_count: Some(3),
        segment_count: Some(10),
        char_count: Some(5000),
        full_text_uri: Some("s3://b/t".into()),
        full_text_sha256: Some("cd".repeat(32)),
        segments_uri: Some("s3://b/s".into()),
        segments_sha256: Some("ef".repeat(32)),
        failure: None,
        pages_without_text: vec![2],
        ocr_pages: vec![0, 1],
        line_count: Some(42),
        pages: vec![crate::PageSize { page_idx: 0, width: 595.28, height: 841.89, unit: "pt".into() }],
        revision: 1,
    };
    roundtrip(&codec, parsed_ok.clone());
    roundtrip(
        &codec,
        DocumentParsed {
            page_count: None,
            failure: Some(Failure { code: "empty_file".into(), message: "the file is empty".into() }),
            ..parsed_ok
        },
    );
    roundtrip(
        &codec,
        DocumentChunked {
            envelope: env(),
            document_id: doc_id(),
            chunking_profile: "default".into(),
            chunking_version: "default@1".into(),
            chunk_count: Some(4),
            chunks_uri: Some("s3://b/c".into()),
            chunks_sha256: Some("00".repeat(32)),
            instructions_found: Some(1),
            failure: None,
            revision: 1,
        },
    );
    roundtrip(
        &codec,
        DocumentIngested {
            envelope: env(),
            document_id: doc_id(),
            chunking_version: "default@1".into(),
            embedding_model: Some("all-MiniLM-L6-v2".into()),
            embedding_dimension: Some(384),
            chunk_count: 4,
            failure: None,
            revision: 1,
        },
    );
    roundtrip(
        &codec,
        QuestionAsked {
            envelope: env(),
            conversation_id: doc_id(),
            user_message_id: doc_id(),
            assistant_message_id: doc_id(),
            question: "Lợi nhuận năm 2023 là bao nhiêu?".into(),
            asked_by: "user-1".into(),
            top_k: Some(8),
            document_ids: vec![doc_id()],
            history: vec![ConversationTurn { role: "user".into(), content: "Doanh thu năm 2023?".into() }],
        },
    );
    roundtrip(
        &codec,
        AnswerProduced {
            envelope: env(),
            conversation_id: doc_id(),
            assistant_message_id: doc_id(),
            answer: "42".into(),
            mode: "extractive".into(),
            abstained: true,
            sections: vec![Section { text: "42".into(), source_ids: vec!["chunk-abc".into()], citations: vec![citation()] }],
            citations: vec![citation()],
            llm_usage: Some(LlmUsage { model: "m".into(), prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }),
            retrieval_json: "{}".into(),
            failure: None,
        },
    );
    roundtrip(&codec, DocumentDeleted { envelope: env(), document_id: doc_id(), deleted_by: "user-1".into() });
}

#[test]
fn garbage_is_rejected_as_what_it_is() {
    // The dead-letter code of each is rag_bus::FailureCode's (tested there).
    let codec = Codec::embedded().unwrap();
    let err = codec.decode_any(b"not avro at all").unwrap_err();
    assert!(matches!(err, CodecError::NotSingleObject(15)), "{err}");
    let mut unknown = vec![0xC3, 0x01];
    unknown.extend_from_slice(&[9; 8]);
    unknown.extend_from_slice(b"xx");
    assert!(matches!(codec.decode_any(&unknown).unwrap_err(), CodecError::UnknownFingerprint(_)));
    // A valid header followed by a truncated datum.
    let event = DocumentDeleted { envelope: env(), document_id: doc_id(), deleted_by: "u".into() };
    let bytes = codec.encode(&event).unwrap();
    assert!(matches!(codec.decode_any(&bytes[..bytes.len() - 5]).unwrap_err(), CodecError::Decode { .. }));
    // The right bytes read as the wrong type.
    let err = codec.decode::<DocumentUploaded>(&bytes).unwrap_err();
    assert!(matches!(err, CodecError::WrongEventType { .. }), "{err}");
}

#[test]
fn derived_envelopes_are_deterministic() {
    let input = env();
    let a = Envelope::caused_by(&input, "parser", "p@1");
    let b = Envelope::caused_by(&input, "parser", "p@1");
    assert_eq!(a.event_id, b.event_id);
    assert_eq!(a.causation_id.as_deref(), Some(input.event_id.as_str()));
    assert_eq!(a.correlation_id, input.correlation_id);
    assert_ne!(a.event_id, Envelope::caused_by(&input, "chunker", "c@1").event_id);
}
