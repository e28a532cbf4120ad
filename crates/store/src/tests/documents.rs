//! The documents read model: statuses, and workspaces kept apart.

use std::collections::HashMap;

use rag_events::{DocumentParsed, DocumentUploaded, Envelope};

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
        revision: 1,
        replaces_sha256: None,
    }
}

/// A text document's DocumentParsed of `up`'s revision, caused by the upload.
fn parsed(up: &DocumentUploaded) -> DocumentParsed {
    DocumentParsed {
        envelope: Envelope::caused_by(&up.envelope, "stage", "test@0"),
        document_id: up.document_id.clone(),
        parser_name: "text".into(),
        parser_version: "1".into(),
        page_count: Some(1),
        segment_count: Some(0),
        char_count: Some(0),
        full_text_uri: None,
        full_text_sha256: None,
        segments_uri: None,
        segments_sha256: None,
        failure: None,
        pages_without_text: vec![],
        ocr_pages: vec![],
        line_count: Some(1),
        pages: vec![],
        revision: up.revision,
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

/// The status rule in SQL is the Rust rule: for every combination of
/// projected steps, Postgres computes the same last unbroken step.
#[tokio::test]
async fn the_sql_status_rule_is_the_rust_rule() {
    let db = super::fresh().await;
    for bits in 0..16i16 {
        let sql = format!(
            "SELECT {rank}::int2, {status} FROM (SELECT $1::int2 AS bits) b",
            rank = crate::status::contiguous_rank("b.bits"),
            status = crate::status::status_of_rank(&crate::status::contiguous_rank("b.bits")),
        );
        let (rank, status): (i16, String) = sqlx::query_as(&sql).bind(bits).fetch_one(&db.pool).await.unwrap();
        let expected = DocumentStatus::last_unbroken_step(bits);
        assert_eq!(rank, expected.map_or(-1, |s| s.rank()), "bits {bits:04b}");
        assert_eq!(status, expected.unwrap_or(DocumentStatus::Uploaded).as_str(), "bits {bits:04b}");
    }
}

/// The four success events of a document are on four topics and may be
/// projected in any order: whatever the order, the status shown never runs
/// ahead of a step not yet projected, and all four end at `ingested`.
#[tokio::test]
async fn a_status_shows_only_steps_whose_predecessors_are_projected() {
    use rag_events::{DocumentChunked, DocumentIngested};
    let db = super::fresh().await;
    // Every permutation of the steps 0 (uploaded) .. 3 (ingested).
    let mut orders: Vec<Vec<usize>> = vec![vec![]];
    for _ in 0..4 {
        orders = orders
            .into_iter()
            .flat_map(|o| (0..4).filter(|s| !o.contains(s)).map(|s| [o.clone(), vec![s]].concat()).collect::<Vec<_>>())
            .collect();
    }
    assert_eq!(orders.len(), 24);
    for order in orders {
        let up = uploaded("ws-a");
        let id = uuid::Uuid::parse_str(&up.document_id).unwrap();
        // Caused by the upload, as the stages' events are.
        let envelope = || Envelope::caused_by(&up.envelope, "stage", "test@0");
        let parsed = parsed(&up);
        let chunked = DocumentChunked {
            envelope: envelope(),
            document_id: up.document_id.clone(),
            chunking_profile: "default".into(),
            chunking_version: "default@1".into(),
            chunk_count: Some(0),
            chunks_uri: None,
            chunks_sha256: None,
            instructions_found: None,
            failure: None,
            revision: 1,
        };
        let ingested = DocumentIngested {
            envelope: envelope(),
            document_id: up.document_id.clone(),
            chunking_version: "default@1".into(),
            embedding_model: None,
            embedding_dimension: None,
            chunk_count: 0,
            failure: None,
            revision: 1,
        };
        let mut done = [false; 4];
        for step in &order {
            let mut tx = db.pool.begin().await.unwrap();
            match step {
                0 => documents::apply_uploaded(&mut tx, &up).await.unwrap(),
                1 => crate::pipeline::apply_parsed(&mut tx, &parsed, &[]).await.unwrap(),
                2 => crate::pipeline::apply_chunked(&mut tx, &chunked, &[]).await.unwrap(),
                _ => crate::pipeline::apply_ingested(&mut tx, &ingested).await.unwrap(),
            }
            tx.commit().await.unwrap();
            done[*step] = true;
            let run = done.iter().take_while(|d| **d).count();
            let expected = [
                DocumentStatus::Uploaded,
                DocumentStatus::Uploaded,
                DocumentStatus::Parsed,
                DocumentStatus::Chunked,
                DocumentStatus::Ingested,
            ][run];
            assert_eq!(documents::status_of(&db.pool, id).await.unwrap(), Some(expected), "order {order:?}, after step {step}");
        }
    }
    // An event without a cause (an upstream system's DocumentParsed) starts
    // the document's run: nothing before it will come.
    let upstream = uploaded("ws-a");
    let id = uuid::Uuid::parse_str(&upstream.document_id).unwrap();
    let ingested = DocumentIngested {
        envelope: Envelope::originating("ws-a", "upstream@1"),
        document_id: upstream.document_id.clone(),
        chunking_version: "default@1".into(),
        embedding_model: None,
        embedding_dimension: None,
        chunk_count: 0,
        failure: None,
        revision: 1,
    };
    let mut tx = db.pool.begin().await.unwrap();
    crate::pipeline::apply_ingested(&mut tx, &ingested).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(documents::status_of(&db.pool, id).await.unwrap(), Some(DocumentStatus::Ingested));
    db.drop_database().await;
}

/// Seen in the chaos harness: the indexer wrote revision 2's index rows,
/// then revision 1's DocumentIngested was projected before revision 2's
/// DocumentChunked. Revision 1's flip must leave revision 2's rows alone
/// (a newer revision is told by its key), so revision 2 is searchable once
/// its own ingestion is projected.
#[tokio::test]
async fn an_earlier_revisions_ingestion_never_takes_a_newer_revisions_index_rows() {
    use rag_events::{DocumentChunked, DocumentIngested};
    let db = super::fresh().await;
    let up = uploaded("ws-a");
    let id = up.document_id.clone();
    let chunk = |revision: i32| rag_model::Chunk {
        chunk_id: format!("chunk-r{revision}"),
        chunk_index: 0,
        text: format!("revision {revision}"),
        token_count: 2,
        page_start: 0,
        page_end: 0,
        segment_start_index: 0,
        segment_end_index: 0,
        char_start: 0,
        char_end: 10,
        line_start: None,
        line_end: None,
    };
    let chunked = |revision: i32| DocumentChunked {
        envelope: Envelope::caused_by(&up.envelope, &format!("chunker-{revision}"), "test@0"),
        document_id: id.clone(),
        chunking_profile: "default".into(),
        chunking_version: "default@1".into(),
        chunk_count: Some(1),
        chunks_uri: None,
        chunks_sha256: None,
        instructions_found: None,
        failure: None,
        revision,
    };
    let ingested = |revision: i32| DocumentIngested {
        envelope: Envelope::caused_by(&up.envelope, &format!("indexer-{revision}"), "test@0"),
        document_id: id.clone(),
        chunking_version: "default@1".into(),
        embedding_model: None,
        embedding_dimension: None,
        chunk_count: 1,
        failure: None,
        revision,
    };
    let mut tx = db.pool.begin().await.unwrap();
    documents::apply_uploaded(&mut tx, &up).await.unwrap();
    crate::pipeline::apply_chunked(&mut tx, &chunked(1), &[chunk(1)]).await.unwrap();
    tx.commit().await.unwrap();
    for revision in [1, 2] {
        let c = chunk(revision);
        let indexed = [crate::pipeline::IndexedChunk { chunk: &c, terms: Default::default(), term_count: 0, embedding: None }];
        let key = rag_model::index_version("default@1", revision);
        let mut tx = db.pool.begin().await.unwrap();
        crate::pipeline::replace_index(&mut tx, "ws-a", &id, &key, None, &indexed, chrono::Utc::now()).await.unwrap();
        tx.commit().await.unwrap();
    }
    // Revision 1's ingestion, before anything of revision 2 is projected.
    let mut tx = db.pool.begin().await.unwrap();
    crate::pipeline::apply_ingested(&mut tx, &ingested(1)).await.unwrap();
    tx.commit().await.unwrap();
    let rows = |key: &'static str| {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM search_chunks WHERE document_id = $1::uuid AND chunking_version = $2")
            .bind(id.clone())
            .bind(key)
            .fetch_one(&db.pool)
    };
    assert_eq!(rows("default@1:r2").await.unwrap(), 1, "revision 2's index rows stay");
    let mut up2 = up.clone();
    up2.revision = 2;
    let mut tx = db.pool.begin().await.unwrap();
    documents::apply_uploaded(&mut tx, &up2).await.unwrap();
    crate::pipeline::apply_chunked(&mut tx, &chunked(2), &[chunk(2)]).await.unwrap();
    crate::pipeline::apply_ingested(&mut tx, &ingested(2)).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!((rows("default@1").await.unwrap(), rows("default@1:r2").await.unwrap()), (0, 1), "revision 2 searchable, revision 1 gone");
    db.drop_database().await;
}

/// A replay waits for each document it re-chunked: flipped onto the new
/// version, failed, deleted, or given a newer revision meanwhile (which the
/// pipeline chunks with its own profile, so the replayed version never
/// becomes active: the five-minute soak's replay waited out its timeout on
/// four edited files). A revised document is the pipeline's whatever became
/// of its new revision, and a document still on its way is none of these.
#[tokio::test]
async fn a_replay_counts_a_document_revised_meanwhile_as_settled_not_failed() {
    use rag_events::{DocumentChunked, DocumentIngested, Failure};
    let db = super::fresh().await;
    let chunk = rag_model::Chunk {
        chunk_id: "c".into(),
        chunk_index: 0,
        text: "text".into(),
        token_count: 1,
        page_start: 0,
        page_end: 0,
        segment_start_index: 0,
        segment_end_index: 0,
        char_start: 0,
        char_end: 4,
        line_start: None,
        line_end: None,
    };
    let chunked = |up: &DocumentUploaded, version: &str, revision: i32| DocumentChunked {
        envelope: Envelope::caused_by(&up.envelope, "chunker", "test@0"),
        document_id: up.document_id.clone(),
        chunking_profile: version.split('@').next().unwrap_or_default().into(),
        chunking_version: version.into(),
        chunk_count: Some(1),
        chunks_uri: None,
        chunks_sha256: None,
        instructions_found: None,
        failure: None,
        revision,
    };
    let ingested = |up: &DocumentUploaded, version: &str, revision: i32, failure: Option<Failure>| DocumentIngested {
        envelope: Envelope::caused_by(&up.envelope, "indexer", "test@0"),
        document_id: up.document_id.clone(),
        chunking_version: version.into(),
        embedding_model: None,
        embedding_dimension: None,
        chunk_count: 1,
        failure,
        revision,
    };
    // One document's upload (and parse), then its chunking and its ingestion
    // (version, revision and how it ended), each projected when given.
    type Step = (DocumentUploaded, Option<(&'static str, i32)>, Option<(&'static str, i32, Option<Failure>)>);
    let project = |steps: Vec<Step>| {
        let pool = db.pool.clone();
        let chunk = chunk.clone();
        async move {
            for (up, c, i) in steps {
                let mut tx = pool.begin().await.unwrap();
                documents::apply_uploaded(&mut tx, &up).await.unwrap();
                crate::pipeline::apply_parsed(&mut tx, &parsed(&up), &[]).await.unwrap();
                if let Some((version, revision)) = c {
                    // Chunk ids are the document's, the version's and the revision's.
                    let chunk = rag_model::Chunk { chunk_id: format!("{}-{version}-{revision}", up.document_id), ..chunk.clone() };
                    crate::pipeline::apply_chunked(&mut tx, &chunked(&up, version, revision), &[chunk]).await.unwrap();
                }
                if let Some((version, revision, failure)) = i {
                    crate::pipeline::apply_ingested(&mut tx, &ingested(&up, version, revision, failure)).await.unwrap();
                }
                tx.commit().await.unwrap();
            }
        }
    };
    let (flips, revised, revised_failed, waiting) = (uploaded("ws-a"), uploaded("ws-a"), uploaded("ws-a"), uploaded("ws-a"));
    let second = |up: &DocumentUploaded| DocumentUploaded { revision: 2, envelope: Envelope::originating("ws-a", "test@0"), ..up.clone() };
    let mut steps = Vec::new();
    for up in [&flips, &revised, &revised_failed, &waiting] {
        steps.push((up.clone(), Some(("default@1", 1)), Some(("default@1", 1, None))));
    }
    // The replay's version of the first is projected and ingested.
    steps.push((flips.clone(), Some(("fine@1", 1)), Some(("fine@1", 1, None))));
    // The second is edited during the replay: revision 2, on the pipeline's profile.
    steps.push((second(&revised), Some(("default@1", 2)), Some(("default@1", 2, None))));
    // The third's new revision fails to index.
    let refused = Failure { code: "embedding_failed".into(), message: "down".into() };
    steps.push((second(&revised_failed), Some(("default@1", 2)), Some(("default@1", 2, Some(refused)))));
    project(steps).await;
    let replayed: Vec<(uuid::Uuid, i32)> =
        [&flips, &revised, &revised_failed, &waiting].iter().map(|u| (u.document_id.parse().unwrap(), 1)).collect();
    let p = crate::operations::replay_progress(&db.pool, &replayed, "fine@1").await.unwrap();
    let mut revised_ids: Vec<uuid::Uuid> = [&revised, &revised_failed].iter().map(|u| u.document_id.parse().unwrap()).collect();
    revised_ids.sort();
    assert_eq!(
        crate::operations::ReplayProgress { flipped: 1, failed: 0, deleted: 0, revised: revised_ids, chunks: 1 },
        p,
        "one flipped, two revised meanwhile, one still on its way"
    );
    assert_eq!(p.settled(), 3);
    // A replayed document no longer in the read model (a rebuild under
    // way) has nothing to wait for either.
    let gone = vec![(uuid::Uuid::now_v7(), 1)];
    let p = crate::operations::replay_progress(&db.pool, &gone, "fine@1").await.unwrap();
    assert_eq!((p.deleted, p.settled()), (1, 1), "{p:?}");
    // A revision the replay chunked itself (revision 2 replayed) is waited for.
    let replayed_second: Vec<(uuid::Uuid, i32)> = vec![(revised.document_id.parse().unwrap(), 2)];
    let p = crate::operations::replay_progress(&db.pool, &replayed_second, "fine@1").await.unwrap();
    assert_eq!(p.settled(), 0, "{p:?}");
    db.drop_database().await;
}
