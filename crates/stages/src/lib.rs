//! Stage processors. Each is stateless and runs in a Kafka consumer group;
//! scaling out means starting more instances.

pub mod failpoint;
pub mod projector;

pub use projector::Projector;
