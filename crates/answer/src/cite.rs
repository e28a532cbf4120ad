//! A citation of a chunk's span: the cited text, its offsets in the
//! document's raw text, and the segment and page it starts in.

use crate::{char_slice, preview, Citation, SourceChunk};

/// The segment holding document offset `pos` (the last one starting at or
/// before it).
pub(crate) fn segment_at(chunk: &SourceChunk, pos: u64) -> (u32, u32) {
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
        revision: chunk.revision,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SegmentSpan;

    #[test]
    fn a_citation_is_its_slice_with_the_segment_it_starts_in() {
        let content = "Doanh thu thuần năm 2023 đạt 1.245,6 tỷ đồng.\n\nLợi nhuận sau thuế đạt 187,3 tỷ đồng.".to_string();
        let chunk = SourceChunk {
            chunk_id: "chunk-a".into(),
            document_id: "doc-1".into(),
            char_start: 100,
            char_end: 100 + content.chars().count() as u64,
            content,
            filename: None,
            page_start: 0,
            page_end: 0,
            lines: None,
            revision: 1,
            segments: vec![
                SegmentSpan { segment_index: 3, page_idx: 1, char_start: 100, char_end: 147 },
                SegmentSpan { segment_index: 4, page_idx: 2, char_start: 147, char_end: 190 },
            ],
        };
        let c = citation("chunk-a", &chunk, 47, 67, true);
        assert_eq!(c.text, "Lợi nhuận sau thuế đ");
        assert_eq!((c.char_start, c.char_end, c.segment_index, c.page_idx), (147, 167, 4, 2));
        let c = citation("chunk-a", &chunk, 0, 9, true);
        assert_eq!((c.text.as_str(), c.segment_index), ("Doanh thu", 3));
    }
}
