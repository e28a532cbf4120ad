//! The lexical scorers' input: BM25 parameters and query terms. The SQL
//! scorer (`rag_store::search::lexical`) and the in-memory one
//! (`rag_searchindex`) take the same input and must rank alike.

/// BM25 parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25 {
    pub k1: f64,
    pub b: f64,
}

impl Default for Bm25 {
    fn default() -> Self {
        Bm25 { k1: 1.2, b: 0.75 }
    }
}

/// A query term: its word (a word's terms do not add up, the best counts)
/// and weight.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryTerm {
    pub term: String,
    pub word: i32,
    pub weight: f64,
}
