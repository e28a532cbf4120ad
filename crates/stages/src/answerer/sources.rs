//! What the answerer reads from the store besides the question: the
//! retrieved chunks with the segments they cover, the documents being read
//! (sent before the first words), and each citation's text and place as
//! the event carries it.

use rag_answer::{SegmentSpan, SourceChunk};
use rag_store::search::{self, ChunkHit};
use uuid::Uuid;

use super::Answerer;
use crate::error::StageError;
use rag_search::retriever::Retrieval;

impl Answerer {
    /// The retrieved chunks with the segments they cover (for the page and
    /// segment of each citation).
    pub(super) async fn sources(&self, ws: &str, retrieval: &Retrieval) -> Result<Vec<SourceChunk>, StageError> {
        let hits: Vec<ChunkHit> = retrieval.chunks.iter().map(|c| c.hit.clone()).collect();
        let mut segments: Vec<Vec<SegmentSpan>> = vec![Vec::new(); hits.len()];
        for s in search::segments_of_chunks(&self.retriever.pool, ws, &hits).await? {
            if let Some(spans) = usize::try_from(s.chunk).ok().and_then(|i| segments.get_mut(i)) {
                spans.push(SegmentSpan {
                    segment_index: s.segment_index as u32,
                    page_idx: s.page_idx as u32,
                    char_start: s.char_start as u64,
                    char_end: s.char_end as u64,
                });
            }
        }
        Ok(hits
            .into_iter()
            .zip(segments)
            .map(|(h, segments)| SourceChunk {
                revision: rag_model::split_index_version(&h.chunking_version).1,
                chunk_id: h.chunk_id,
                document_id: h.document_id.to_string(),
                content: h.content,
                char_start: h.char_start as u64,
                char_end: h.char_end as u64,
                filename: h.filename,
                segments,
                page_start: h.page_start.max(0) as u32,
                page_end: h.page_end.max(0) as u32,
                lines: h.line_start.zip(h.line_end).map(|(a, b)| (a.max(1) as u32, b.max(1) as u32)),
            })
            .collect())
    }
}

/// The documents `chunks` come from, in rank order, each with its pages
/// (none for text, Markdown and web pages, whose one "page" is not a page:
/// every door that says what is being read would name "page 1").
pub(super) fn sources_read(chunks: &[SourceChunk]) -> Vec<rag_store::messages::DeltaSource> {
    let mut out: Vec<rag_store::messages::DeltaSource> = Vec::new();
    for c in chunks {
        let pageless =
            c.filename.as_deref().and_then(|name| rag_docparse::detect_format("", name)).is_some_and(rag_docparse::Format::is_pageless);
        let pages = (c.page_start..=c.page_end.max(c.page_start)).map(|p| p + 1).filter(|_| !pageless);
        match out.iter_mut().find(|s| s.document_id == c.document_id) {
            Some(s) => s.pages.extend(pages),
            None => out.push(rag_store::messages::DeltaSource {
                document_id: c.document_id.clone(),
                filename: c.filename.clone(),
                pages: pages.collect(),
            }),
        }
    }
    for s in &mut out {
        s.pages.sort_unstable();
        s.pages.dedup();
    }
    out
}

impl Answerer {
    /// A validated citation as the event carries it: with the text it cites
    /// and where that text is (lines, boxes on the page, a spreadsheet's
    /// `Sheet!A5:D5`), read from the segments now so the answer keeps them
    /// whatever happens later.
    pub(super) async fn to_event(&self, ws: &str, c: &rag_answer::Citation) -> Result<rag_events::Citation, StageError> {
        let geometry = match Uuid::parse_str(&c.document_id) {
            Ok(id) => {
                let segments =
                    rag_store::raw::span_segments(&self.retriever.pool, ws, id, Some(c.revision), c.char_start, c.char_end).await?;
                rag_docparse::segments::span_geometry(&segments, c.char_start, c.char_end)
            }
            Err(_) => Default::default(),
        };
        Ok(rag_events::Citation {
            source_id: c.source_id.clone(),
            chunk_id: c.chunk_id.clone(),
            document_id: c.document_id.clone(),
            segment_index: c.segment_index as i32,
            page_idx: c.page_idx as i32,
            char_start: c.char_start as i64,
            char_end: c.char_end as i64,
            snippet_preview: c.snippet_preview.clone(),
            text: Some(c.text.clone()),
            line_start: geometry.line_start.map(|l| l as i32),
            line_end: geometry.line_end.map(|l| l as i32),
            boxes: geometry
                .boxes
                .iter()
                .map(|b| rag_events::PageBox { page_idx: b.page_idx as i32, x0: b.rect.x0, y0: b.rect.y0, x1: b.rect.x1, y1: b.rect.y1 })
                .collect(),
            cell_range: geometry.cells.as_ref().map(rag_docparse::CellRange::label),
            revision: c.revision,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(document: &str, filename: &str, pages: (u32, u32)) -> SourceChunk {
        SourceChunk {
            chunk_id: format!("{document}-{}", pages.0),
            document_id: document.into(),
            content: String::new(),
            char_start: 0,
            char_end: 1,
            filename: Some(filename.into()),
            segments: Vec::new(),
            page_start: pages.0,
            page_end: pages.1,
            lines: None,
            revision: 1,
        }
    }

    #[test]
    fn a_text_a_markdown_file_or_a_web_page_is_read_without_a_page() {
        let read = sources_read(&[
            chunk("a", "bao-cao.pdf", (0, 1)),
            chunk("b", "chinh-sach-nhan-su.md", (0, 0)),
            chunk("c", "noi-quy.HTML", (0, 0)),
            chunk("a", "bao-cao.pdf", (3, 3)),
            chunk("d", "ghi-chu.txt", (0, 0)),
        ]);
        let pages: Vec<(&str, Vec<u32>)> = read.iter().map(|s| (s.document_id.as_str(), s.pages.clone())).collect();
        assert_eq!(pages, vec![("a", vec![1, 2, 4]), ("b", vec![]), ("c", vec![]), ("d", vec![])]);
    }
}
