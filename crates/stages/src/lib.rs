//! Stage processors. Each is stateless and runs in a Kafka consumer group;
//! scaling out means starting more instances.

pub mod answerer;
pub mod chunker;
pub mod common;
pub mod error;
pub mod evidence_ranker;
pub mod failpoint;
pub mod indexer;
pub mod ocr;
pub mod parse_worker;
pub mod parser;
pub mod pg_offsets;
pub mod projector;
pub mod stuck;

/// Every stage of the pipeline, with the chunker of `profile`: who they
/// are, what they consume and produce, who owns their positions. A new
/// stage is added here (and started in the CLI's `run`).
pub fn pipeline(profile: &rag_chunking::ChunkingProfile) -> Vec<rag_bus::StageIdentity> {
    vec![parser::identity(), chunker::identity(profile), indexer::identity(), answerer::identity(), projector::identity()]
}

pub use error::StageError;
pub use pg_offsets::PgOffsets;
pub use projector::Projector;

#[cfg(test)]
mod tests;
