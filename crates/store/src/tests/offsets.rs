//! Postgres-owned offsets: compare-and-set inside the effect's transaction.

use crate::offsets::{self, Claim};

#[tokio::test]
async fn a_claim_moves_the_partition_once_and_recognises_redeliveries() {
    let db = super::fresh().await;
    let (group, topic) = ("g", "documents.uploaded");
    assert_eq!(offsets::load(&db.pool, group, topic, 0).await.unwrap(), None, "nothing stored yet");

    let mut tx = db.pool.begin().await.unwrap();
    assert_eq!(offsets::claim(&mut tx, group, topic, 0, 0).await.unwrap(), Claim::Apply);
    tx.commit().await.unwrap();
    assert_eq!(offsets::load(&db.pool, group, topic, 0).await.unwrap(), Some(1));

    // The same record again (a redelivery) changes nothing.
    let mut tx = db.pool.begin().await.unwrap();
    assert_eq!(offsets::claim(&mut tx, group, topic, 0, 0).await.unwrap(), Claim::AlreadyApplied { next_offset: 1 });
    tx.commit().await.unwrap();

    // A claim whose transaction rolls back leaves the position where it was.
    let mut tx = db.pool.begin().await.unwrap();
    assert_eq!(offsets::claim(&mut tx, group, topic, 0, 1).await.unwrap(), Claim::Apply);
    tx.rollback().await.unwrap();
    assert_eq!(offsets::load(&db.pool, group, topic, 0).await.unwrap(), Some(1));

    // Partitions and groups are independent.
    let mut tx = db.pool.begin().await.unwrap();
    assert_eq!(offsets::claim(&mut tx, group, topic, 1, 7).await.unwrap(), Claim::Apply);
    assert_eq!(offsets::claim(&mut tx, "other", topic, 0, 0).await.unwrap(), Claim::Apply);
    tx.commit().await.unwrap();
    assert_eq!(offsets::load(&db.pool, group, topic, 1).await.unwrap(), Some(8));
    assert_eq!(offsets::load(&db.pool, group, topic, 0).await.unwrap(), Some(1));
    db.drop_database().await;
}

#[tokio::test]
async fn concurrent_claims_of_one_record_apply_it_once() {
    let db = super::fresh().await;
    let mut tx1 = db.pool.begin().await.unwrap();
    assert_eq!(offsets::claim(&mut tx1, "g", "t", 0, 0).await.unwrap(), Claim::Apply);
    // A second owner (a rebalance in flight) waits on the row lock, then
    // sees the first one's commit.
    let pool = db.pool.clone();
    let second = tokio::spawn(async move {
        let mut tx2 = pool.begin().await.unwrap();
        let claim = offsets::claim(&mut tx2, "g", "t", 0, 0).await.unwrap();
        tx2.commit().await.unwrap();
        claim
    });
    tokio::task::yield_now().await;
    tx1.commit().await.unwrap();
    assert_eq!(second.await.unwrap(), Claim::AlreadyApplied { next_offset: 1 });
    db.drop_database().await;
}
