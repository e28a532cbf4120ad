//! Property: whatever the model returns (real quotes, quotes from other
//! chunks, paraphrases, invented ids, odd case and spacing), every
//! citation references a chunk retrieved for the question, and the
//! document's raw text sliced at [char_start, char_end) lies inside that
//! chunk and equals the quote when one was located. The same holds for
//! extractive answers.

use crate::cite::{validate, RawSection};
use crate::{extractive, SegmentSpan, SourceChunk};
use proptest::prelude::*;

const WORDS: &[&str] = &[
    "doanh", "thu", "tăng", "lợi", "nhuận", "đồng", "revenue", "grew", "risk", "margin", "năm", "2023", "12,4%", "the", "board", "Việt",
    "Nam", "cloud", "sales",
];

fn sentence() -> impl Strategy<Value = String> {
    (prop::collection::vec(prop::sample::select(WORDS), 2..9), prop::sample::select(vec![".", "!", "?", ""]))
        .prop_map(|(w, end)| format!("{}{end}", w.join(" ")))
}

/// A document (several documents' worth of segments) and chunks over it.
fn corpus() -> impl Strategy<Value = (Vec<String>, Vec<(usize, usize, usize)>)> {
    // Documents: each a list of paragraphs; chunks: (doc, first paragraph, last paragraph).
    prop::collection::vec(prop::collection::vec(prop::collection::vec(sentence(), 1..4).prop_map(|s| s.join(" ")), 1..6), 1..4)
        .prop_flat_map(|docs| {
            let texts: Vec<String> = docs.iter().map(|paras| paras.iter().map(|p| format!("{p}\n\n")).collect()).collect();
            let shapes: Vec<usize> = docs.iter().map(Vec::len).collect();
            let chunk = (0..shapes.len()).prop_flat_map(move |d| {
                let n = shapes[d];
                (Just(d), 0..n).prop_flat_map(move |(d, a)| (Just(d), Just(a), a..n))
            });
            (Just(texts), prop::collection::vec(chunk, 1..6))
        })
}

fn source_chunks(texts: &[String], spans: &[(usize, usize, usize)]) -> Vec<SourceChunk> {
    spans
        .iter()
        .enumerate()
        .map(|(i, (d, a, b))| {
            let paras: Vec<&str> = texts[*d].split_inclusive("\n\n").collect();
            let mut offsets = vec![0usize];
            for p in &paras {
                offsets.push(offsets.last().unwrap() + p.chars().count());
            }
            let content: String = paras[*a..=*b].concat();
            let segments = (0..paras.len())
                .map(|k| SegmentSpan {
                    segment_index: k as u32,
                    page_idx: (k / 2) as u32,
                    char_start: offsets[k] as u64,
                    char_end: offsets[k + 1] as u64,
                })
                .collect();
            SourceChunk {
                chunk_id: format!("chunk-{i}"),
                document_id: format!("doc-{d}"),
                char_start: offsets[*a] as u64,
                char_end: offsets[b + 1] as u64,
                content,
                filename: None,
                page_start: 0,
                page_end: 0,
                lines: None,
                segments,
            }
        })
        .collect()
}

fn slice(text: &str, s: u64, e: u64) -> String {
    text.chars().skip(s as usize).take((e - s) as usize).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn citations_point_into_retrieved_chunks((texts, spans) in corpus(),
        picks in prop::collection::vec((0usize..8, 0usize..400, 1usize..40, 0u8..4), 1..8),
        question in prop::collection::vec(prop::sample::select(WORDS), 1..5))
    {
        let chunks = source_chunks(&texts, &spans);
        // Model output: ids from the retrieved set or invented; quotes cut
        // from some chunk (maybe another one), re-cased, re-spaced, or made up.
        let sections: Vec<RawSection> = picks.iter().map(|(ci, at, len, kind)| {
            let id = if *ci < chunks.len() { chunks[*ci].chunk_id.clone() } else { format!("chunk-invented-{ci}") };
            let src = &chunks[*ci % chunks.len()].content;
            let n = src.chars().count();
            let start = at % n.max(1);
            let q: String = src.chars().skip(start).take(*len).collect();
            let quote = match kind { 0 => q, 1 => q.to_uppercase(), 2 => q.split_whitespace().collect::<Vec<_>>().join("   "), _ => "không có trong văn bản".into() };
            RawSection { text: "section".into(), source_ids: vec![id, "chunk:chunk-0".into()], quotes: vec![quote] }
        }).collect();
        let (validated, report) = validate(&sections, &chunks);
        for id in &report.dropped_source_ids {
            prop_assert!(!chunks.iter().any(|c| &c.chunk_id == id));
        }
        let extractive = extractive::answer(&question.join(" "), &chunks, 3);
        for section in validated.iter().chain(&extractive) {
            for cit in &section.citations {
                let chunk = chunks.iter().find(|c| c.chunk_id == cit.chunk_id);
                prop_assert!(chunk.is_some(), "cites a chunk that was not retrieved: {}", cit.chunk_id);
                let chunk = chunk.unwrap();
                prop_assert!(section.source_ids.contains(&cit.chunk_id));
                prop_assert_eq!(&cit.document_id, &chunk.document_id);
                prop_assert!(chunk.char_start <= cit.char_start && cit.char_start <= cit.char_end && cit.char_end <= chunk.char_end);
                let d: usize = chunk.document_id.trim_start_matches("doc-").parse().unwrap();
                let raw = slice(&texts[d], cit.char_start, cit.char_end);
                prop_assert_eq!(&raw, &cit.text);
                let seg = chunk.segments.iter().find(|s| s.segment_index == cit.segment_index).unwrap();
                prop_assert!(seg.char_start <= cit.char_start && cit.char_start < seg.char_end.max(seg.char_start + 1));
                prop_assert_eq!(seg.page_idx, cit.page_idx);
                if cit.exact {
                    // Located quotes: equal up to case and whitespace.
                    let norm = |s: &str| s.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ");
                    let matches_a_quote = sections.iter().flat_map(|s| &s.quotes).any(|q| norm(q) == norm(&raw))
                        || extractive.iter().any(|s| s.text == raw);
                    prop_assert!(matches_a_quote, "located text {:?} equals no quote", raw);
                }
            }
        }
    }
}
