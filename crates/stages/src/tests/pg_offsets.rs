//! Postgres-owned positions as the runner sees them ([`StartAt`]).

use std::path::Path;

use rag_bus::{Inbound, StartAt};
use rag_store::testing::{stack_database_url, TestDatabase};

use crate::pg_offsets::PgOffsets;

fn record(offset: i64) -> Inbound {
    Inbound { topic: "documents.chunked".into(), partition: 2, offset, key: None, payload: None, headers: Vec::new(), timestamp_ms: None }
}

#[tokio::test]
async fn positions_resume_after_the_last_applied_record() {
    let url = stack_database_url(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")).expect("run `scripts/stack up` first");
    let db = TestDatabase::create(&url).await.unwrap();
    let offsets = PgOffsets::new(db.pool.clone(), "rag-indexer".into());
    assert_eq!(offsets.start_at("documents.chunked", 2).await.unwrap(), StartAt::Beginning, "nothing applied: from the start");

    // A dead letter (or a deleted document's event) is skipped: the
    // partition moves past it without an effect.
    offsets.skip(&record(4)).await.unwrap();
    assert_eq!(offsets.start_at("documents.chunked", 2).await.unwrap(), StartAt::Offset(5));
    assert_eq!(
        offsets.start_at_output_after_commit("documents.chunked", 2).await.unwrap(),
        StartAt::AppliedBefore(5),
        "a stage producing after its commit resumes where Kafka says its output was delivered, if lower"
    );
    assert_eq!(offsets.start_at("documents.chunked", 3).await.unwrap(), StartAt::Beginning, "other partitions are untouched");

    let mut tx = db.pool.begin().await.unwrap();
    assert_eq!(offsets.claim(&mut tx, &record(4)).await.unwrap(), rag_store::offsets::Claim::AlreadyApplied { next_offset: 5 });
    tx.commit().await.unwrap();
    db.drop_database().await;
}
