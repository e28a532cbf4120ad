//! Hybrid retrieval: BM25 over the inverted index and nearest neighbours
//! over pgvector, fused by `rag_retrieval::fuse` (language-aware). Used by
//! the answerer, `rag-engine search` and `rag-dev eval retrieval`.

use std::collections::HashMap;
use std::sync::Arc;

use rag_embed::Embedder;
use rag_retrieval::{
    detect_language, fuse, needs_restoration, query_coverage, restore_diacritics, Candidate, EmbedderLanguages, FusionDecision, Language,
    Restoration,
};
use rag_store::search::{self, Bm25, ChunkHit, QueryTerm, SearchScope};
use rag_store::sqlx::PgPool;
use serde::Serialize;

use crate::search_index::SearchIndexes;
use rag_searchindex::Scored;
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Lexical,
    Dense,
    Hybrid,
}

/// A retrieval mode name that is not one of lexical, dense, hybrid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown retrieval mode {0:?} (lexical, dense, hybrid)")]
pub struct UnknownMode(pub String);

impl std::str::FromStr for Mode {
    type Err = UnknownMode;
    fn from_str(s: &str) -> Result<Self, UnknownMode> {
        match s {
            "lexical" => Ok(Mode::Lexical),
            "dense" => Ok(Mode::Dense),
            "hybrid" => Ok(Mode::Hybrid),
            other => Err(UnknownMode(other.to_string())),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RetrieveError {
    #[error(transparent)]
    Store(#[from] rag_store::StoreError),
    #[error(transparent)]
    Embed(#[from] rag_embed::EmbedError),
    #[error("dense retrieval needs an embedder (EMBEDDER=local or openai)")]
    NoEmbedder,
}

impl RetrieveError {
    pub fn is_transient(&self) -> bool {
        match self {
            RetrieveError::Store(e) => e.is_transient(),
            RetrieveError::Embed(e) => e.is_transient(),
            RetrieveError::NoEmbedder => false,
        }
    }
}

/// One retrieved chunk with how it ranked.
#[derive(Debug, Clone, Serialize)]
pub struct RetrievedChunk {
    #[serde(flatten)]
    pub hit: ChunkHit,
    /// Fused score (`rag_retrieval::fuse`, 0..1) in hybrid mode; BM25 or cosine otherwise.
    pub score: f64,
    pub lexical_rank: Option<usize>,
    pub dense_rank: Option<usize>,
    pub bm25: Option<f64>,
    pub cosine: Option<f64>,
    pub language: Language,
    /// The reranker's score, when one reordered the fused list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank_score: Option<f64>,
}

/// What the optional reranker did with a hybrid query.
#[derive(Debug, Clone, Serialize)]
pub struct RerankReport {
    pub model: String,
    /// Fused candidates sent.
    pub candidates: usize,
    /// Why the fused order stands (timeout, HTTP status, unreadable answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub ms: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Retrieval {
    pub mode: Mode,
    pub query_language: Language,
    /// A Vietnamese question typed without marks, restored from the
    /// workspace's text (what was embedded, and what the answer's model
    /// reads); None for any other question.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restoration: Option<Restoration>,
    /// Whether the dense side took part (an embedder exists and reads the
    /// query's language).
    pub dense_used: bool,
    pub chunks: Vec<RetrievedChunk>,
    /// How a hybrid query's two sides were weighed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fusion: Option<FusionDecision>,
    /// Set when a reranker is configured and the query was hybrid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank: Option<RerankReport>,
}

/// Lexical hits whose text a question typed without marks is restored from
/// (all the candidates by default: on vi-squad-train, 30 texts settled 94%
/// of the words right, 100 texts 98%; docs/answers.md).
const RESTORE_FROM_TEXTS: usize = 100;
/// The least share of its weight the dense side keeps for a restored
/// question whose words the texts did not settle.
const MIN_DENSE_TRUST: f64 = 0.1;

#[derive(Clone)]
pub struct Retriever {
    pub pool: PgPool,
    pub embedder: Embedder,
    /// What the embedder's vectors are meaningful for.
    pub languages: EmbedderLanguages,
    pub bm25: Bm25,
    /// Candidates taken from each side before fusion.
    pub candidates: usize,
    /// Weight of the dense side in the fusion (lexical is 1).
    pub dense_weight: f64,
    /// In-memory BM25 (the same ranking); None: the SQL scorer.
    pub search_index: Option<Arc<SearchIndexes>>,
    /// Reorders the fused top candidates of a hybrid query (`RERANK_*`);
    /// None by default: no reranker weights ship with the project.
    pub reranker: Option<rag_embed::Reranker>,
    /// Fused candidates the reranker sees (at least the query's top k).
    pub rerank_candidates: usize,
    /// Restore the diacritics of a Vietnamese question typed without them
    /// from the lexical side's texts before it is embedded and answered.
    pub restore_diacritics: bool,
}

impl Retriever {
    pub async fn retrieve(
        &self,
        workspace_id: &str,
        query: &str,
        top_k: usize,
        document_ids: &[Uuid],
        mode: Mode,
    ) -> Result<Retrieval, RetrieveError> {
        let scope = SearchScope { workspace_id, document_ids };
        let query_language = detect_language(query);
        let pool_size = self.candidates.max(top_k);
        // A single mode returns its top k: rows are read for those only
        // (fusion needs every candidate's row: the dense side's text for
        // its language, either side's hit for the fused top).
        let rows_wanted = if mode == Mode::Hybrid { pool_size } else { top_k };
        // How many the in-memory index ranks: the fusion's candidates, or a
        // single mode's top k with as many again in reserve for chunks that
        // vanish between the ranking and the reading of their rows. Fewer
        // ranked is less scored: MaxScore prunes against the k-th best, and
        // at 100,000 chunks ranking 100 for a top 8 cost ~1 ms a query.
        let ranked_wanted = if mode == Mode::Hybrid { pool_size } else { top_k.saturating_mul(2).min(pool_size) };
        let wants_dense = match mode {
            Mode::Lexical => false,
            Mode::Dense => true,
            Mode::Hybrid => self.embedder.identity().is_some() && self.languages.understands(query_language),
        };
        // A Vietnamese question typed without marks is restored from the
        // texts the lexical side finds for it before it is embedded (and
        // answered): the lexical side first, then the dense one.
        let restore = self.restore_diacritics && mode != Mode::Lexical && needs_restoration(query);
        let scope_ref = &scope;
        // A question restored from the lexical side's texts reads them all,
        // whatever the mode.
        let (lexical_ranked, lexical_rows) = if restore { (pool_size, pool_size) } else { (ranked_wanted, rows_wanted) };
        let lexical = |text: String| async move {
            let terms: Vec<QueryTerm> = rag_retrieval::query_terms(&text)
                .into_iter()
                .map(|t| QueryTerm { term: t.term, word: t.word as i32, weight: t.weight })
                .collect();
            Ok::<_, RetrieveError>(match &self.search_index {
                Some(index) => self.lexical_in_memory(index, scope_ref, &terms, lexical_ranked, lexical_rows).await?,
                None => search::lexical(&self.pool, scope_ref, &terms, self.bm25, pool_size).await?,
            })
        };
        let dense = |text: String| async move {
            if !wants_dense {
                return Ok::<_, RetrieveError>(Vec::new());
            }
            self.dense(scope_ref, &text, ranked_wanted, rows_wanted, pool_size).await
        };
        let (lexical, dense, restoration) = if restore {
            let lexical = lexical(query.to_string()).await?;
            let restored = restore_diacritics(query, lexical.iter().take(RESTORE_FROM_TEXTS).map(|h| h.content.as_str()));
            // The lexical side keeps the question as typed: its folded terms
            // already match every accented form, and asking again with the
            // restored words would favour a wrongly restored one ("bảo" for
            // "bão"). Measured both ways: docs/answers.md.
            let dense = dense(restored.text.clone()).await?;
            (lexical, dense, Some(restored))
        } else {
            // Both sides at once: one's round trips overlap the other's work.
            let lexical = async {
                if mode == Mode::Dense {
                    return Ok(Vec::new());
                }
                lexical(query.to_string()).await
            };
            let (lexical, dense) = tokio::try_join!(lexical, dense(query.to_string()))?;
            (lexical, dense, None)
        };
        // The restored question's embedding is trusted as far as its words
        // were settled.
        let dense_weight = self.dense_weight * restoration.as_ref().map_or(1.0, Restoration::confidence).max(MIN_DENSE_TRUST);
        // A reranker sees more than the top k: what it is for is lifting a
        // chunk the fusion ranked just below.
        let mut fusion = None;
        let fused_wanted = if self.reranker.is_some() { top_k.max(self.rerank_candidates) } else { top_k };
        let mut chunks: Vec<RetrievedChunk> = match mode {
            Mode::Lexical => lexical.into_iter().take(top_k).enumerate().map(|(i, h)| single(h, Some(i + 1), None)).collect(),
            Mode::Dense => dense.into_iter().take(top_k).enumerate().map(|(i, h)| single(h, None, Some(i + 1))).collect(),
            Mode::Hybrid => {
                let candidate = |h: &ChunkHit| Candidate::new(h.chunk_id.clone(), h.score, detect_language(&h.content));
                // A lexical hit with no vector of the query's model (its
                // document not yet re-embedded after a model change) is one
                // the dense side cannot rank, not one it ranked low.
                let model = self.embedder.identity().map(|(m, _)| m);
                let lexical_candidates: Vec<Candidate> = lexical
                    .iter()
                    .map(|h| Candidate { dense_can_rank: model.is_some() && h.embedding_model.as_deref() == model, ..candidate(h) })
                    .collect();
                let dense_candidates: Vec<Candidate> = dense.iter().map(candidate).collect();
                let top_coverage = lexical.first().map(|h| query_coverage(query, &h.content)).unwrap_or(0.0);
                let (fused, decision) =
                    fuse(&lexical_candidates, top_coverage, &dense_candidates, query_language, &self.languages, dense_weight);
                fusion = Some(decision);
                fused
                    .into_iter()
                    .take(fused_wanted)
                    .filter_map(|f| {
                        let lex = lexical.iter().find(|h| h.chunk_id == f.id);
                        let den = dense.iter().find(|h| h.chunk_id == f.id);
                        let hit = lex.or(den)?.clone();
                        Some(RetrievedChunk {
                            language: detect_language(&hit.content),
                            score: f.score,
                            lexical_rank: f.lexical_rank,
                            dense_rank: f.dense_rank,
                            bm25: lex.map(|h| h.score),
                            cosine: den.map(|h| h.score),
                            rerank_score: None,
                            hit,
                        })
                    })
                    .collect()
            }
        };
        let rerank_report = match (&self.reranker, mode) {
            (Some(r), Mode::Hybrid) if chunks.len() > 1 => {
                let asked = restoration.as_ref().map_or(query, |r| r.text.as_str());
                Some(rerank(r, asked, &mut chunks).await)
            }
            _ => None,
        };
        chunks.truncate(top_k);
        Ok(Retrieval {
            mode,
            query_language,
            restoration,
            dense_used: wants_dense,
            chunks: one_version_per_document(chunks),
            fusion,
            rerank: rerank_report,
        })
    }
}

impl Retriever {
    /// The dense side's hits for `text`: exact search over the vectors the
    /// process holds for a small workspace, pgvector's HNSW index otherwise.
    async fn dense(
        &self,
        scope: &SearchScope<'_>,
        text: &str,
        ranked_wanted: usize,
        rows_wanted: usize,
        pool_size: usize,
    ) -> Result<Vec<ChunkHit>, RetrieveError> {
        let (model, _) = self.embedder.identity().ok_or(RetrieveError::NoEmbedder)?;
        let vector = self.embedder.embed(&[text.to_string()], rag_embed::InputKind::Query).await?.pop().unwrap_or_default();
        if let Some(index) = &self.search_index {
            if let Some(ranked) = index.nearest(scope.workspace_id, model, &vector, scope.document_ids, ranked_wanted).await? {
                return self.rows_in_order(scope.workspace_id, ranked, rows_wanted).await;
            }
        }
        Ok(search::dense(&self.pool, scope, model, &vector, pool_size).await?)
    }

    /// Ranks in the process's index, then reads the winners' rows; a chunk
    /// that stopped being searchable in between is left out, like a row a
    /// SQL statement would no longer see.
    async fn lexical_in_memory(
        &self,
        index: &SearchIndexes,
        scope: &SearchScope<'_>,
        terms: &[QueryTerm],
        limit: usize,
        rows_wanted: usize,
    ) -> Result<Vec<ChunkHit>, RetrieveError> {
        let ranked = index.search(scope.workspace_id, terms, scope.document_ids, self.bm25, limit).await?;
        self.rows_in_order(scope.workspace_id, ranked, rows_wanted).await
    }

    /// The rows of the first `wanted` ranked chunks that still have one, in
    /// rank order, with their scores: read `wanted` at a time, so a chunk
    /// that vanished since the ranking makes room for the next.
    async fn rows_in_order(&self, workspace_id: &str, ranked: Vec<Scored>, wanted: usize) -> Result<Vec<ChunkHit>, RetrieveError> {
        let wanted = wanted.max(1);
        let mut out = Vec::with_capacity(wanted.min(ranked.len()));
        for page in ranked.chunks(wanted) {
            let ids: Vec<String> = page.iter().map(|r| r.chunk_id.clone()).collect();
            let mut rows: HashMap<String, ChunkHit> =
                search::chunks_by_id(&self.pool, workspace_id, &ids).await?.into_iter().map(|h| (h.chunk_id.clone(), h)).collect();
            out.extend(page.iter().filter_map(|r| {
                let mut hit = rows.remove(&r.chunk_id)?;
                hit.score = r.score;
                Some(hit)
            }));
            if out.len() >= wanted {
                out.truncate(wanted);
                break;
            }
        }
        Ok(out)
    }
}

/// The lexical and dense lists come from two statements, so a re-chunking
/// flip between them could pair two versions of one document. Each document
/// keeps the version of its best-ranked chunk (the list is ranked).
fn one_version_per_document(chunks: Vec<RetrievedChunk>) -> Vec<RetrievedChunk> {
    let mut version_of: std::collections::HashMap<Uuid, String> = std::collections::HashMap::new();
    chunks
        .into_iter()
        .filter(|c| version_of.entry(c.hit.document_id).or_insert_with(|| c.hit.chunking_version.clone()) == &c.hit.chunking_version)
        .collect()
}

fn single(hit: ChunkHit, lexical_rank: Option<usize>, dense_rank: Option<usize>) -> RetrievedChunk {
    RetrievedChunk {
        language: detect_language(&hit.content),
        score: hit.score,
        bm25: lexical_rank.map(|_| hit.score),
        cosine: dense_rank.map(|_| hit.score),
        lexical_rank,
        dense_rank,
        rerank_score: None,
        hit,
    }
}

/// Reorders `chunks` (the fused order) by `reranker`'s scores; on any
/// failure leaves them as they are and says why. One try, bounded by the
/// reranker's timeout: a query never waits on a reranker for long.
pub(crate) async fn rerank(reranker: &rag_embed::Reranker, query: &str, chunks: &mut Vec<RetrievedChunk>) -> RerankReport {
    let started = std::time::Instant::now();
    let texts: Vec<String> = chunks.iter().map(|c| c.hit.content.clone()).collect();
    let result = reranker.rerank(query, &texts).await;
    let mut report = RerankReport { model: reranker.model().to_string(), candidates: texts.len(), error: None, ms: 0 };
    match result {
        Ok(order) => {
            let mut slots: Vec<Option<RetrievedChunk>> = std::mem::take(chunks).into_iter().map(Some).collect();
            for (index, score) in order {
                if let Some(mut c) = slots.get_mut(index).and_then(Option::take) {
                    c.rerank_score = score.is_finite().then_some(score);
                    chunks.push(c);
                }
            }
            // (read_ranking lists every index; nothing is lost if not.)
            chunks.extend(slots.into_iter().flatten());
        }
        Err(e) => {
            tracing::warn!(error = %e, "reranking failed; the fused order stands");
            report.error = Some(e.to_string());
        }
    }
    report.ms = started.elapsed().as_millis() as u64;
    report
}
