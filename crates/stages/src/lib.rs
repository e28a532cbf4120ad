//! Stage processors. Each is stateless and runs in a Kafka consumer group;
//! scaling out means starting more instances.

pub mod answerer;
pub mod chunker;
pub mod common;
pub mod failpoint;
pub mod indexer;
pub mod ocr;
pub mod parser;
pub mod projector;
pub mod retriever;
pub mod stuck;

pub use projector::Projector;
