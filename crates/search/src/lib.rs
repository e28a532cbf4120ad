//! Search over a workspace, as the answerer, `rag-engine search`, MCP's
//! `search` and `rag-dev eval retrieval` all do it: [`retriever`] runs the
//! lexical and dense queries (in the store, or in the [`search_index`]
//! kept in memory), fuses them by `rag_retrieval`'s pure rules and
//! optionally reranks. Not a stage: it consumes no topic, so it lives
//! beside the stages rather than among them.

pub mod retriever;
pub mod search_index;

pub use retriever::{Mode, Retrieval, RetrieveError, Retriever};

#[cfg(test)]
mod tests;
