//! The documents read model: statuses, and workspaces kept apart.

use std::collections::HashMap;

use rag_events::{DocumentUploaded, Envelope};

use crate::documents::{self, DocumentStatus};

fn uploaded(ws: &str) -> DocumentUploaded {
    DocumentUploaded {
        envelope: Envelope::originating(ws, "test@0"),
        document_id: uuid::Uuid::now_v7().to_string(),
        blob_uri: "s3://bucket/key".into(),
        filename: "a.txt".into(),
        content_type: "text/plain".into(),
        size_bytes: 3,
        sha256: "0".repeat(64),
        uploaded_by: "test".into(),
        metadata: HashMap::new(),
    }
}

#[test]
fn statuses_round_trip_and_order() {
    use DocumentStatus::*;
    for s in [Uploaded, Parsed, Chunked, Ingested, Failed, Deleted] {
        assert_eq!(s.as_str().parse::<DocumentStatus>().unwrap(), s);
        assert_eq!(s.to_string(), s.as_str());
    }
    assert!("archived".parse::<DocumentStatus>().is_err());
    assert!(Uploaded.rank() < Parsed.rank() && Chunked.rank() < Ingested.rank() && Ingested.rank() < Failed.rank());
    assert!(Deleted.rank() > Failed.rank(), "nothing moves a deleted document back");
    assert!([Uploaded, Parsed, Chunked].iter().all(|s| s.in_progress()));
    assert!([Ingested, Failed, Deleted].iter().all(|s| !s.in_progress()));
}

#[tokio::test]
async fn an_upload_is_projected_once_and_only_its_workspace_sees_it() {
    let db = super::fresh().await;
    let e = uploaded("ws-a");
    for _ in 0..2 {
        let mut tx = db.pool.begin().await.unwrap();
        documents::apply_uploaded(&mut tx, &e).await.unwrap();
        tx.commit().await.unwrap();
    }
    let id = uuid::Uuid::parse_str(&e.document_id).unwrap();
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM documents").fetch_one(&db.pool).await.unwrap();
    assert_eq!(count, 1, "applying the same event twice writes one row");
    assert_eq!(documents::status_of(&db.pool, id).await.unwrap(), Some(DocumentStatus::Uploaded));
    assert!(documents::get(&db.pool, "ws-a", id).await.unwrap().is_some());
    assert!(documents::get(&db.pool, "ws-b", id).await.unwrap().is_none(), "another workspace never sees it");
    let mut tx = db.pool.begin().await.unwrap();
    assert!(documents::awaiting_first_ingestion(&mut tx, id).await.unwrap().is_some(), "uploaded, not yet ingested");
    assert!(!documents::is_deleted_locked(&mut tx, id).await.unwrap());
    tx.commit().await.unwrap();
    db.drop_database().await;
}
