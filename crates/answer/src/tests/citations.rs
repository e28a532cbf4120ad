//! Property: whatever the model cites (ids shown, ids invented, odd case
//! and brackets, quotes real or paraphrased), every citation references a
//! chunk retrieved for the question, the document's raw text sliced at
//! [char_start, char_end) lies inside that chunk and is the citation's
//! text, and a narrowed quote is exactly the quote. The same holds for
//! extractive answers.

use crate::contract::{ModelAnswer, ModelSection};
use crate::{evidence, extractive, grounding, CitationReport, SegmentSpan, SourceChunk};
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
                revision: 1,
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
        let evidence = evidence::build(&chunks, 10_000);
        // Model output: ids shown or invented, in odd spellings; quotes cut
        // from a cited unit, from anywhere, or made up.
        let sections: Vec<ModelSection> = picks.iter().map(|(ui, at, len, kind)| {
            let n = evidence.units.len();
            let id = match kind { 0 => format!("S{}", ui + 1), 1 => format!("[s{}]", ui + 1), 2 => format!("S{}", ui + 100), _ => "chunk-0".into() };
            let src = if n > 0 { evidence.units[ui % n].text.clone() } else { String::new() };
            let count = src.chars().count();
            let start = at % count.max(1);
            let q: String = src.chars().skip(start).take(*len).collect();
            let quote = match kind { 0 | 2 => Some(q), 1 => Some(q.to_uppercase()), _ => Some("không có trong văn bản".into()) };
            ModelSection { text: "section".into(), cites: vec![id, "S1".into()], quote }
        }).collect();
        let answer = ModelAnswer { answerable: true, sections: sections.clone() };
        let mut report = CitationReport::default();
        let validated = grounding::ground(&answer, Some(&question.join(" ")), &evidence, &chunks, &mut report);
        for id in &report.dropped_source_ids {
            prop_assert!(evidence.get(id).is_none());
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
                prop_assert!(cit.exact);
                // A citation is whole units (one, or a run merged), or a
                // quote narrowing one: exactly the quote, inside that unit.
                let abs = |u: &evidence::EvidenceUnit| (chunks[u.chunk].char_start + u.start as u64, chunks[u.chunk].char_start + u.end as u64);
                let in_chunk: Vec<(u64, u64)> = evidence.units.iter().filter(|u| chunks[u.chunk].chunk_id == cit.chunk_id).map(abs).collect();
                let whole_units = in_chunk.iter().any(|(s, _)| *s == cit.char_start) && in_chunk.iter().any(|(_, e)| *e == cit.char_end);
                let quote_in_a_unit = sections.iter().filter_map(|s| s.quote.as_deref()).any(|q| q.trim() == raw)
                    && in_chunk.iter().any(|(s, e)| *s <= cit.char_start && cit.char_end <= *e);
                // Extractive answers cite over all units (no budget).
                let extractive_unit = evidence::build(&chunks, usize::MAX).units.iter().any(|u| {
                    chunks[u.chunk].chunk_id == cit.chunk_id && abs(u) == (cit.char_start, cit.char_end)
                });
                prop_assert!(whole_units || quote_in_a_unit || extractive_unit, "{:?} is neither whole units nor an exact quote", raw);
            }
        }
    }
}
