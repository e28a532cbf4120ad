//! The stage runner: the consumer loop every stage runs, split by concern.
//!
//! - [`contract`]: what a stage is given and answers ([`Processor`]).
//! - [`runner`]: [`StageRunner`], the loop: positions, retries, offsets.
//! - [`consumer`]: the Kafka consumer and its (deferred) rebalance handling.
//! - [`positions`]: which partitions are owned and where each stands (pure).
//! - [`dead_letter`]: `<topic>.dlq` and the limit on dead letters.
//! - [`lag`]: the stage's own lag metrics.

mod consumer;
pub mod contract;
pub mod dead_letter;
mod lag;
pub mod positions;
pub mod runner;

pub use contract::{Inbound, Outcome, ProcessError, Processor, StageSpec, StartAt};
pub use dead_letter::DeadLetterLimit;
pub use runner::{record_out, run_stage, StageRunner};
