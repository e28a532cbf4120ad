//! The stage runner: the consumer loop every stage runs, split by concern.
//!
//! - [`contract`]: what a stage is ([`Stage`], [`StageIdentity`]), what it
//!   is given and what it answers.
//! - [`failure_code`]: [`FailureCode`], why a record was dead-lettered.
//! - [`output`]: [`StageOutput`], how a stage produces (and counts) events.
//! - [`runner`]: [`StageRunner`], the loop: retries, dead letters, offsets.
//! - `positioning`: where each assigned partition resumes.
//! - [`consumer`]: the Kafka consumer and its (deferred) rebalance handling.
//! - [`positions`]: which partitions are owned and where each stands (pure).
//! - [`lanes`]: which received records may start now, one lane per partition (pure).
//! - [`dead_letter`]: `<topic>.dlq` and the limit on dead letters.
//! - [`lag`]: the stage's own lag metrics.

mod consumer;
pub mod contract;
pub mod dead_letter;
pub mod failure_code;
mod lag;
pub mod lanes;
pub mod output;
mod positioning;
pub mod positions;
pub mod runner;

pub use contract::{ErrorSource, FailureCode, Inbound, Outcome, Positions, ProcessError, Stage, StageIdentity, StartAt};
pub use dead_letter::DeadLetterLimit;
pub use output::StageOutput;
pub use runner::{run_stage, StageRunner};
