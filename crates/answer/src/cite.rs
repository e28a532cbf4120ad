//! Citation validation: only retrieved chunks may be cited; quotes are
//! located in their chunk (exactly, then ignoring case and whitespace
//! differences) to give exact offsets; a citation whose quote cannot be
//! found falls back to the chunk's range.

use crate::{char_slice, preview, Citation, CitationReport, Section, SourceChunk};

/// Where `needle` occurs in `haystack`, in chars: exact first, then on
/// both texts lower-cased with whitespace runs collapsed (offsets mapped
/// back to the original).
pub fn locate(haystack: &str, needle: &str) -> Option<(usize, usize)> {
    let needle = needle.trim();
    if needle.is_empty() {
        return None;
    }
    if let Some(byte) = haystack.find(needle) {
        let start = haystack[..byte].chars().count();
        return Some((start, start + needle.chars().count()));
    }
    let (h, h_map) = normalise(haystack);
    let (n, _) = normalise(needle);
    if n.is_empty() {
        return None;
    }
    let hc: Vec<char> = h.chars().collect();
    let nc: Vec<char> = n.chars().collect();
    let pos = hc.windows(nc.len()).position(|w| w == nc.as_slice())?;
    let start = h_map[pos];
    let end = h_map[pos + nc.len() - 1] + 1;
    Some((start, end))
}

/// Lower-cased, whitespace runs as one space, trimmed; plus, for each char
/// of the result, its char index in the original.
fn normalise(s: &str) -> (String, Vec<usize>) {
    let mut out = String::new();
    let mut map = Vec::new();
    let mut pending_space: Option<usize> = None;
    for (i, c) in s.chars().enumerate() {
        if c.is_whitespace() {
            if !out.is_empty() && pending_space.is_none() {
                pending_space = Some(i);
            }
            continue;
        }
        if let Some(sp) = pending_space.take() {
            out.push(' ');
            map.push(sp);
        }
        for lc in c.to_lowercase() {
            out.push(lc);
            map.push(i);
        }
    }
    (out, map)
}

/// The segment holding document offset `pos` (the last one starting at or
/// before it).
fn segment_at(chunk: &SourceChunk, pos: u64) -> (u32, u32) {
    chunk
        .segments
        .iter()
        .filter(|s| s.char_start <= pos)
        .max_by_key(|s| s.char_start)
        .or(chunk.segments.first())
        .map(|s| (s.segment_index, s.page_idx))
        .unwrap_or((0, 0))
}

/// A citation of `chunk` at chunk-relative chars `[start, end)`.
pub fn citation(source_id: &str, chunk: &SourceChunk, start: usize, end: usize, exact: bool) -> Citation {
    let text = char_slice(&chunk.content, start, end);
    let doc_start = chunk.char_start + start as u64;
    let (segment_index, page_idx) = segment_at(chunk, doc_start);
    Citation {
        source_id: source_id.to_string(),
        chunk_id: chunk.chunk_id.clone(),
        document_id: chunk.document_id.clone(),
        segment_index,
        page_idx,
        char_start: doc_start,
        char_end: chunk.char_start + end as u64,
        snippet_preview: preview(&text),
        text,
        exact,
    }
}

/// Normalises what a model wrote as a source id (`chunk:chunk-…`,
/// `[CHUNK_ID=chunk-…]`, spaces) to the bare chunk id.
pub fn clean_source_id(raw: &str) -> String {
    let s = raw.trim().trim_start_matches('[').trim_end_matches(']');
    let s = s.strip_prefix("CHUNK_ID=").unwrap_or(s);
    let s = s.strip_prefix("chunk:").unwrap_or(s);
    s.trim().to_string()
}

/// A section as the model produced it, before validation.
#[derive(Debug, Clone, PartialEq, Default, serde::Deserialize, serde::Serialize)]
pub struct RawSection {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub source_ids: Vec<String>,
    #[serde(default)]
    pub quotes: Vec<String>,
}

/// At least half of the quote's distinct words are in the section's text
/// (diacritics and case aside): the quote says what the section says. With
/// a real 1.5B model, a looser rule (two shared words) moved a citation
/// from the storm passage the section copied to a cold-weather sentence it
/// quoted, which shared only "ở" and "một" with it.
fn supports(quote: &str, text: &str) -> bool {
    let words = |s: &str| -> std::collections::BTreeSet<String> {
        rag_lexical::words(s).iter().filter(|w| w.chars().any(char::is_alphanumeric)).map(|w| rag_lexical::fold(w)).collect()
    };
    let (q, t) = (words(quote), words(text));
    !q.is_empty() && 2 * q.intersection(&t).count() >= q.len()
}

/// Validates the model's sections against this question's retrieved
/// chunks: unknown source ids are dropped (and reported), quotes become
/// exact citations, a quote found only in another retrieved chunk moves the
/// citation there, cited chunks without a located quote cite their range.
pub fn validate(sections: &[RawSection], retrieved: &[SourceChunk]) -> (Vec<Section>, CitationReport) {
    let mut report = CitationReport::default();
    let mut out = Vec::new();
    for raw in sections {
        let text = raw.text.trim().to_string();
        if text.is_empty() {
            continue;
        }
        let mut source_ids = Vec::new();
        let mut citations = Vec::new();
        let mut quote_used = vec![false; raw.quotes.len()];
        for sid in &raw.source_ids {
            let id = clean_source_id(sid);
            let Some(chunk) = retrieved.iter().find(|c| c.chunk_id == id) else {
                if !report.dropped_source_ids.contains(&id) {
                    report.dropped_source_ids.push(id);
                }
                continue;
            };
            if source_ids.contains(&id) {
                continue;
            }
            source_ids.push(id.clone());
            let mut found = false;
            for (qi, quote) in raw.quotes.iter().enumerate() {
                if let Some((s, e)) = locate(&chunk.content, quote) {
                    citations.push(citation(&id, chunk, s, e, true));
                    quote_used[qi] = true;
                    found = true;
                }
            }
            if !found {
                citations.push(citation(&id, chunk, 0, chunk.content.chars().count(), false));
            }
        }
        // A quote in none of the cited chunks but in another retrieved one:
        // the model named the wrong source; cite the chunk that holds it.
        let mut reattributed = false;
        for (qi, quote) in raw.quotes.iter().enumerate() {
            if quote_used[qi] {
                continue;
            }
            // Only a quote that says what the section says: a model also
            // quotes an unrelated sentence of another passage, and moving
            // the citation there would cite the wrong evidence exactly.
            if !supports(quote, &text) {
                continue;
            }
            let holder = retrieved
                .iter()
                .filter(|c| !source_ids.contains(&c.chunk_id))
                .find_map(|c| locate(&c.content, quote).map(|span| (c, span)));
            if let Some((chunk, (s, e))) = holder {
                citations.push(citation(&chunk.chunk_id, chunk, s, e, true));
                source_ids.push(chunk.chunk_id.clone());
                quote_used[qi] = true;
                report.reattributed_quotes += 1;
                reattributed = true;
            }
        }
        if reattributed {
            // The wrongly named chunks cited only by their whole range go.
            let wrong: Vec<String> = citations.iter().filter(|c| !c.exact).map(|c| c.source_id.clone()).collect();
            citations.retain(|c| c.exact);
            source_ids.retain(|id| !wrong.contains(id));
        }
        report.located_quotes += quote_used.iter().filter(|u| **u).count();
        report.unlocated_quotes += quote_used.iter().filter(|u| !**u && !source_ids.is_empty()).count();
        out.push(Section { text, source_ids, citations });
    }
    (out, report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SegmentSpan;

    fn chunk() -> SourceChunk {
        let content = "Doanh thu thuần năm 2023 đạt 1.245,6 tỷ đồng.\n\nLợi nhuận   sau thuế đạt 187,3 tỷ đồng.".to_string();
        SourceChunk {
            chunk_id: "chunk-a".into(),
            document_id: "doc-1".into(),
            char_start: 100,
            char_end: 100 + content.chars().count() as u64,
            content,
            filename: None,
            page_start: 0,
            page_end: 0,
            lines: None,
            segments: vec![
                SegmentSpan { segment_index: 3, page_idx: 1, char_start: 100, char_end: 147 },
                SegmentSpan { segment_index: 4, page_idx: 2, char_start: 147, char_end: 190 },
            ],
        }
    }

    #[test]
    fn exact_then_tolerant_location() {
        let c = chunk();
        assert_eq!(locate(&c.content, "1.245,6 tỷ đồng"), Some((29, 44)));
        // Case and whitespace differ: still found, offsets in the original.
        let (s, e) = locate(&c.content, "lợi nhuận sau THUẾ").unwrap();
        assert_eq!(char_slice(&c.content, s, e), "Lợi nhuận   sau thuế");
        assert_eq!(locate(&c.content, "không có"), None);
        assert_eq!(locate(&c.content, "   "), None);
    }

    #[test]
    fn validation_drops_unknown_ids_and_falls_back_to_the_chunk() {
        let c = chunk();
        let sections = vec![
            RawSection {
                text: "Lợi nhuận tăng.".into(),
                source_ids: vec!["chunk:chunk-a".into(), "chunk-made-up".into()],
                quotes: vec!["lợi nhuận sau thuế".into()],
            },
            RawSection {
                text: "Không trích dẫn được.".into(),
                source_ids: vec!["[CHUNK_ID=chunk-a]".into()],
                quotes: vec!["not in the text".into()],
            },
        ];
        let (out, report) = validate(&sections, std::slice::from_ref(&c));
        assert_eq!(report.dropped_source_ids, vec!["chunk-made-up"]);
        assert_eq!((report.located_quotes, report.unlocated_quotes), (1, 1));
        let cit = &out[0].citations[0];
        assert!(cit.exact);
        assert_eq!((cit.segment_index, cit.page_idx), (4, 2));
        assert_eq!(cit.char_start, 100 + 47);
        assert_eq!(cit.text, "Lợi nhuận   sau thuế");
        let fallback = &out[1].citations[0];
        assert!(!fallback.exact);
        assert_eq!((fallback.char_start, fallback.char_end), (c.char_start, c.char_end));
        assert_eq!(fallback.segment_index, 3);
    }

    #[test]
    fn a_quote_under_the_wrong_source_id_is_cited_where_it_is() {
        let right = chunk();
        let mut wrong = chunk();
        wrong.chunk_id = "chunk-b".into();
        wrong.document_id = "doc-2".into();
        wrong.content = "Lãi suất tiết kiệm giảm xuống dưới 5%.".into();
        let sections = vec![RawSection {
            text: "Lợi nhuận đạt 187,3 tỷ đồng.".into(),
            source_ids: vec!["chunk-b".into()],
            quotes: vec!["sau thuế đạt 187,3 tỷ đồng".into()],
        }];
        let (out, report) = validate(&sections, &[wrong.clone(), right.clone()]);
        assert_eq!((report.located_quotes, report.unlocated_quotes, report.reattributed_quotes), (1, 0, 1));
        assert_eq!(out[0].source_ids, vec!["chunk-a"]);
        assert_eq!(out[0].citations.len(), 1);
        assert_eq!(out[0].citations[0].document_id, "doc-1");
        assert_eq!(out[0].citations[0].text, "sau thuế đạt 187,3 tỷ đồng");

        // A quote of an unrelated sentence elsewhere does not move the
        // citation: the named chunk keeps its whole-range fallback.
        let unrelated = vec![RawSection {
            text: "Lãi suất tiết kiệm giảm.".into(),
            source_ids: vec!["chunk-b".into()],
            quotes: vec!["Doanh thu thuần năm 2023 đạt 1.245,6 tỷ đồng".into()],
        }];
        assert!(!supports(
            "Một đợt không khí lạnh tăng cường sẽ khiến nhiệt độ ở Hà Nội giảm xuống còn 12 độ C vào cuối tuần",
            "Bão số 4 đổ bộ vào Quảng Bình gây mưa lớn kéo dài, nhiều tuyến đường ở huyện Lệ Thủy bị ngập sâu hơn một mét."
        ));
        assert!(supports("6,8 triệu tấn", "Việt Nam xuất khẩu 6,8 triệu tấn gạo."));
        let (out, report) = validate(&unrelated, &[wrong, right]);
        assert_eq!((report.reattributed_quotes, report.unlocated_quotes), (0, 1));
        assert_eq!(out[0].source_ids, vec!["chunk-b"]);
        assert!(!out[0].citations[0].exact);
    }
}
