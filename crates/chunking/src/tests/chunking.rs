use crate::{chunk, profile, profiles, ChunkingProfile, TokenCounter, WordCounter, WordPieceCounter};
use proptest::prelude::*;
use rag_docparse::segments::{assemble, Block};
use rag_docparse::{char_slice, Segment};

fn doc(text: &str, max_segment_chars: usize) -> (String, Vec<Segment>) {
    assemble(&[Block::new(0, text), Block::new(1, "Trang hai.\n\nĐoạn cuối.")], max_segment_chars)
}

fn check(full: &str, segments: &[Segment], chunks: &[crate::Chunk], profile: &ChunkingProfile, counter: &dyn TokenCounter) {
    assert!(!chunks.is_empty());
    assert_eq!(chunks[0].segment_start_index, 0);
    assert_eq!(chunks.last().unwrap().segment_end_index as usize, segments.len() - 1);
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(c.chunk_index as usize, i);
        assert!(c.chunk_id.starts_with("chunk-"));
        let covered = &segments[c.segment_start_index as usize..=c.segment_end_index as usize];
        // The chunk's range is the union of its segments' ranges.
        assert_eq!(c.char_start, covered[0].char_start);
        assert_eq!(c.char_end, covered.last().unwrap().char_end);
        assert_eq!(c.text, char_slice(full, c.char_start, c.char_end));
        assert_eq!(c.page_start, covered[0].page_idx);
        assert_eq!(c.page_end, covered.last().unwrap().page_idx);
        let tokens: usize = covered.iter().map(|s| counter.count(&s.text)).sum();
        assert_eq!(c.token_count as usize, tokens);
        assert!(covered.len() == 1 || tokens + counter.special_tokens() <= profile.max_tokens, "budget kept");
        if i > 0 {
            let prev = &chunks[i - 1];
            assert!(c.segment_start_index > prev.segment_start_index, "progress");
            assert!(c.segment_start_index <= prev.segment_end_index + 1, "no segment skipped");
            let overlap = (prev.segment_end_index + 1).saturating_sub(c.segment_start_index) as usize;
            assert!(overlap <= profile.overlap_segments);
        }
    }
    let ids: std::collections::HashSet<_> = chunks.iter().map(|c| &c.chunk_id).collect();
    assert_eq!(ids.len(), chunks.len(), "ids are unique within a document");
}

#[test]
fn profiles_are_named_and_versioned() {
    assert_eq!(profile("default@1").unwrap().id(), "default@1");
    assert_eq!(profile("fine").unwrap().id(), "fine@1");
    assert!(profile("default@99").is_none());
    assert!(profile("nope").is_none());
    assert!(profiles().len() >= 2);
}

#[test]
fn chunk_ids_are_deterministic_and_scoped() {
    let (full, segments) = doc("Doanh thu tăng. Lợi nhuận giảm.\n\nRủi ro tỷ giá.", 600);
    let p = profile("default@1").unwrap();
    let a = chunk("doc-a", &segments, &p, &WordCounter);
    let again = chunk("doc-a", &segments, &p, &WordCounter);
    assert_eq!(a, again);
    let other_doc = chunk("doc-b", &segments, &p, &WordCounter);
    assert_ne!(a[0].chunk_id, other_doc[0].chunk_id, "same text in two documents never collides");
    let fine = chunk("doc-a", &segments, &profile("fine@1").unwrap(), &WordCounter);
    assert_ne!(a[0].chunk_id, fine[0].chunk_id, "versions never collide");
    check(&full, &segments, &a, &p, &WordCounter);
}

#[test]
fn wordpiece_counter_matches_the_model_tokenizer() {
    let Ok(dir) = std::env::var("MINILM_MODEL_DIR") else {
        panic!("MINILM_MODEL_DIR is not set: run `scripts/stack up` (it installs all-MiniLM-L6-v2) and source .local/env");
    };
    let counter = WordPieceCounter::from_file(&std::path::Path::new(&dir).join("tokenizer.json")).unwrap();
    // Known WordPiece results of the BERT uncased vocabulary.
    assert_eq!(counter.count("Hello world"), 2);
    assert_eq!(counter.count("unaffable"), 3); // un ##aff ##able
                                               // The tokenizer strips diacritics and splits Vietnamese into pieces.
    assert!(counter.count("Doanh thu năm 2023 đạt 1.245,6 tỷ đồng") >= 10);
    let long = "word ".repeat(600);
    assert_eq!(counter.count(&long), 600, "no truncation at 128");
    let (full, segments) = doc(&"Sentence number one is here. ".repeat(100), 300);
    let p = profile("default@1").unwrap();
    let chunks = chunk("d", &segments, &p, &counter);
    check(&full, &segments, &chunks, &p, &counter);
    assert!(chunks.iter().all(|c| c.token_count as usize + 2 <= 256));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn chunks_cover_segments_in_order_under_budget(
        words in prop::collection::vec(prop::sample::select(vec!["Việt", "Nam", "tăng", "revenue", "1.245,6", ". ", "\n\n", " ", "x"]), 1..400),
        max_seg in 16usize..200,
        max_tokens in 4usize..64,
        overlap in 0usize..3,
    ) {
        let text = words.concat();
        prop_assume!(!text.trim().is_empty());
        let (full, segments) = doc(&text, max_seg);
        let p = ChunkingProfile { name: "t".into(), version: 1, max_tokens, overlap_segments: overlap };
        let chunks = chunk("doc", &segments, &p, &WordCounter);
        check(&full, &segments, &chunks, &p, &WordCounter);
    }
}
