//! How `run` runs its stages: retries, dead letters, back-pressure, lag, metrics.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Stages (environment variable, default)")]
pub struct StageSettings {
    /// A stage stops (instead of dead-lettering more) when more than this many of the last STAGE_DLQ_WINDOW events were dead-lettered; the event over the limit is kept for the restart.
    #[arg(long, env = "STAGE_DLQ_MAX", global = true, default_value_t = 10)]
    pub stage_dlq_max: usize,
    /// Events over which STAGE_DLQ_MAX counts; 0 disables the limit.
    #[arg(long, env = "STAGE_DLQ_WINDOW", global = true, default_value_t = 20)]
    pub stage_dlq_window: usize,
    /// Retries of a transient processing error before the stage stops (it resumes at that event on restart).
    #[arg(long, env = "STAGE_MAX_RETRIES", global = true, default_value_t = 5)]
    pub stage_max_retries: u32,
    /// First retry backoff in milliseconds; doubles per attempt.
    #[arg(long, env = "STAGE_RETRY_BACKOFF_MS", global = true, default_value_t = 200)]
    pub stage_retry_backoff_ms: u64,
    /// Longest retry backoff in milliseconds.
    #[arg(long, env = "STAGE_MAX_BACKOFF_MS", global = true, default_value_t = 10_000)]
    pub stage_max_backoff_ms: u64,
    /// Seconds between consumer lag computations.
    #[arg(long, env = "LAG_INTERVAL_SECS", global = true, default_value_t = 5)]
    pub lag_interval_secs: u64,
    /// A document or answer still unfinished after this many seconds counts in rag_stuck_items (with lag 0 it was lost: run `rag-engine verify`).
    #[arg(long, env = "STUCK_AFTER_SECS", global = true, default_value_t = 900)]
    pub stuck_after_secs: u64,
    /// Records each stage instance holds at once, running and queued. Its partitions are processed side by side (up to one record each at a time, in offset order, so the events of one document stay in order); a partition holding half the bound is paused until it is down to a quarter, and at the bound the stage stops fetching until one finishes. 1: one record at a time (docs/delivery.md has the measurements behind the default).
    #[arg(long, env = "STAGE_MAX_IN_FLIGHT", global = true, default_value_t = 64)]
    pub stage_max_in_flight: usize,
    /// Consumers per stage in one `run` process (members of one group). Measured on the local tansu broker, 4 made ingest much slower (group coordination); keep 1 there.
    #[arg(long, env = "STAGE_INSTANCES", global = true, default_value_t = 1)]
    pub stage_instances: usize,
    /// Address of the Prometheus /metrics endpoint of `run`.
    #[arg(long, env = "METRICS_ADDR", global = true, default_value = "127.0.0.1:9464")]
    pub metrics_addr: SocketAddr,
}

/// How a client of a remote service (the embedder, the answer LLM) retries
/// a transient failure: as the stages retry theirs.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub backoff: Duration,
}

impl StageSettings {
    pub fn retry(&self) -> RetryPolicy {
        RetryPolicy { max_retries: self.stage_max_retries, backoff: Duration::from_millis(self.stage_retry_backoff_ms) }
    }
}
