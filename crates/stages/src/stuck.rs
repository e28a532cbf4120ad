//! The stuck-items gauge: documents and answers in a non-terminal state for
//! longer than a threshold. Beside a lag of 0 it means events were lost
//! (`rag-engine verify` lists them, `verify --repair` re-drives them); with
//! lag it only means the pipeline is behind.

use std::time::Duration;

use rag_store::sqlx::PgPool;
use rag_telemetry::events::StuckItems;
use rag_telemetry::InternalEvent;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

/// Sets `rag_stuck_items{kind}` every `every` until `shutdown`.
pub async fn watch(pool: PgPool, stuck_after: Duration, every: Duration, shutdown: CancellationToken) {
    let secs = i64::try_from(stuck_after.as_secs()).unwrap_or(i64::MAX);
    let mut ticker = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => {}
        }
        match rag_store::documents::count_unfinished_since(&pool, secs).await {
            Ok(count) => StuckItems { kind: "document", count }.emit(),
            Err(e) => warn!(error = %e, "counting stuck documents failed"),
        }
        match rag_store::messages::count_pending_since(&pool, secs).await {
            Ok(count) => StuckItems { kind: "message", count }.emit(),
            Err(e) => warn!(error = %e, "counting stuck answers failed"),
        }
        debug!("stuck items counted");
    }
}
