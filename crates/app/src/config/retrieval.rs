//! Lexical and dense search, their fusion, the reranker and the in-memory index.

use clap::Args;
use secrecy::SecretString;

use super::LexicalIndexChoice;

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Retrieval (environment variable, default)")]
pub struct RetrievalSettings {
    /// BM25 term-frequency saturation.
    #[arg(long, env = "BM25_K1", global = true, default_value_t = 1.2)]
    pub bm25_k1: f64,
    /// BM25 length normalisation.
    #[arg(long, env = "BM25_B", global = true, default_value_t = 0.75)]
    pub bm25_b: f64,
    /// Chunks answers and searches retrieve by default.
    #[arg(long, env = "RETRIEVAL_TOP_K", global = true, default_value_t = 8)]
    pub retrieval_top_k: usize,
    /// Candidates taken from each side (lexical, dense) before fusion.
    #[arg(long, env = "RETRIEVAL_CANDIDATES", global = true, default_value_t = 100)]
    pub retrieval_candidates: usize,
    /// Weight of the dense ranking in the fusion (lexical weighs 1).
    #[arg(long, env = "RETRIEVAL_DENSE_WEIGHT", global = true, default_value_t = 1.0)]
    pub retrieval_dense_weight: f64,
    /// Restore the diacritics of a Vietnamese question typed without any ("doanh thu nam 2023") from the texts the lexical side finds for it, before it is embedded and shown to the answer's model (docs/answers.md). `false`: such a question is embedded as typed.
    #[arg(long, env = "RETRIEVAL_RESTORE_DIACRITICS", global = true, default_value_t = true, action = clap::ArgAction::Set)]
    pub retrieval_restore_diacritics: bool,
    /// Reranker (optional): base URL of a Cohere/Jina-style rerank API, version included (requests go to {base}/rerank; llama.cpp's server with a reranking model, TEI, Jina, Cohere). Unset: no reranking, the fused order.
    #[arg(long, env = "RERANK_BASE_URL", global = true)]
    pub rerank_base_url: Option<String>,
    /// Reranker model name (required with RERANK_BASE_URL).
    #[arg(long, env = "RERANK_MODEL", global = true)]
    pub rerank_model: Option<String>,
    /// Reranker API key, sent as a bearer token (local servers need none).
    #[arg(long, env = "RERANK_API_KEY", global = true, hide_env_values = true)]
    pub rerank_api_key: Option<SecretString>,
    /// Longest a query waits for the reranker, in milliseconds; past it (or on any error) the fused order stands.
    #[arg(long, env = "RERANK_TIMEOUT_MS", global = true, default_value_t = 2000)]
    pub rerank_timeout_ms: u64,
    /// Fused candidates sent to the reranker (at least the query's top k).
    #[arg(long, env = "RERANK_CANDIDATES", global = true, default_value_t = 20)]
    pub rerank_candidates: usize,
    /// Where BM25 is scored: `memory` (an inverted index per searched workspace held by the process, caught up with Postgres before each query; the same ranking) or `postgres` (one SQL statement; seconds at 100,000 chunks).
    #[arg(long, env = "LEXICAL_INDEX", global = true, default_value = "memory")]
    pub lexical_index: LexicalIndexChoice,
    /// What the in-memory search indexes of a process may hold, in postings (~12 bytes; a vector component counts a third); past it the least recently searched workspaces are dropped and reload when searched. Only searched workspaces are loaded.
    #[arg(long, env = "SEARCH_INDEX_MAX_POSTINGS", global = true, default_value_t = rag_search::search_index::DEFAULT_MAX_POSTINGS)]
    pub search_index_max_postings: usize,
    /// With LEXICAL_INDEX=memory, workspaces of at most this many chunks also have their vectors held (fp32 and an 8-bit copy, ~1.9 KB per 384-dimension chunk) for exact nearest neighbours; larger ones use pgvector's HNSW index. 0: always pgvector.
    #[arg(long, env = "DENSE_IN_MEMORY_MAX_CHUNKS", global = true, default_value_t = rag_search::search_index::DEFAULT_DENSE_MAX_CHUNKS)]
    pub dense_in_memory_max_chunks: usize,
}
