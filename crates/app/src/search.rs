//! The MCP `search` tool's search: the answerer's own hybrid retrieval,
//! each passage given as the document's raw text at its range.

use futures::future::BoxFuture;
use rag_api::mcp::{Passage, PassageSearch};
use rag_search::retriever::{Mode, Retriever};

pub struct RetrieverSearch(pub Retriever);

impl PassageSearch for RetrieverSearch {
    fn search<'a>(&'a self, workspace: &'a str, query: &'a str, top_k: usize) -> BoxFuture<'a, Result<Vec<Passage>, String>> {
        Box::pin(async move {
            let started = std::time::Instant::now();
            let found = self.0.retrieve(workspace, query, top_k, &[], Mode::Hybrid).await.map_err(|e| format!("search failed: {e}"))?;
            let retrieved = started.elapsed();
            let mut passages = Vec::with_capacity(found.chunks.len());
            for c in found.chunks {
                let hit = c.hit;
                // The chunk's offsets are in the revision its index version names.
                let revision = rag_model::split_index_version(&hit.chunking_version).1;
                let (start, end) = (hit.char_start.max(0) as u64, hit.char_end.max(0) as u64);
                // The raw text at the chunk's range, which a citation or
                // read_passage gives back exactly (read from the segments
                // it overlaps only); the chunk's own text if the document's
                // text is gone meanwhile.
                let text = rag_store::raw::span_text(&self.0.pool, workspace, hit.document_id, Some(revision), start, end)
                    .await
                    .map_err(|e| format!("search failed: {e}"))?
                    .unwrap_or(hit.content);
                passages.push(Passage {
                    document_id: hit.document_id.to_string(),
                    filename: hit.filename,
                    page: hit.page_start.max(0) as u32 + 1,
                    char_start: start,
                    char_end: end,
                    text,
                    score: c.score,
                });
            }
            // How long the retrieval and the reading of the passages each took.
            tracing::info!(workspace_id = %workspace, hits = passages.len(), retrieve_ms = retrieved.as_millis() as u64,
                read_ms = (started.elapsed() - retrieved).as_millis() as u64, "passages searched");
            Ok(passages)
        })
    }
}
