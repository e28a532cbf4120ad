//! Delivery after restarts, checked against what the broker says: the cases
//! seen on HEAD 518e61b (a restart skipped each partition's next event),
//! and `rag-engine verify` finding and repairing what was skipped.

use std::collections::HashMap;
use std::time::Duration;

use crate::common::*;
use rag_events::EventType;

const WAIT: Duration = Duration::from_secs(120);

async fn statuses(t: &TestEnv, workspace: &str) -> HashMap<String, String> {
    let docs = t.documents().await.into_iter().filter(|d| d.workspace_id == workspace);
    docs.map(|d| (d.filename.unwrap_or_default(), d.status.as_str().to_string())).collect()
}

async fn wait_terminal(t: &TestEnv, workspace: &str, n: usize) -> HashMap<String, String> {
    wait_until(&format!("{n} documents of {workspace} in a terminal state"), WAIT, || async {
        let s = statuses(t, workspace).await;
        s.len() == n && s.values().all(|st| st == "ingested" || st == "failed")
    })
    .await;
    statuses(t, workspace).await
}

/// Kafka's committed offset of `group` on every partition of `topic` equals
/// the log end, as a standard client reads them.
async fn assert_committed_at_log_end(t: &TestEnv, group: &str, event: EventType) {
    let bus = t.bus();
    let topic = bus.topics.of(event);
    let group = bus.group_of(group);
    wait_until(&format!("{group} committed at the log end of {topic}"), Duration::from_secs(30), || async {
        let ends = rag_bus::admin::watermarks(&bus, &topic).await.unwrap();
        let committed: HashMap<i32, Option<i64>> =
            rag_bus::admin::committed_offsets(&bus, &group, &topic).await.unwrap().into_iter().collect();
        ends.iter().all(|(p, _, high)| *high == 0 || committed.get(p).copied().flatten() == Some(*high))
    })
    .await;
}

async fn verify(t: &TestEnv, args: &[&str]) -> (bool, serde_json::Value) {
    let mut full = vec!["verify", "--json"];
    full.extend_from_slice(args);
    let (ok, out, err) = t.run(&full).await;
    let value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("verify printed no JSON ({e}): {out}\n{err}"));
    (ok, value)
}

/// Seen on HEAD 518e61b: `scripts/demo`, then `run all` again, then seven
/// uploads into another workspace: three stayed `uploaded` forever (and
/// through the HTTP API the first upload after a restart never parsed).
#[tokio::test(flavor = "multi_thread")]
async fn uploads_after_a_restart_all_finish() {
    let t = TestEnv::new().await;
    let mut all = t.spawn(&["run", "all"], &[]);
    let first = format!("{}-first", t.workspace);
    t.upload_files(&first, &[("a.txt", "Badges are at the front desk."), ("b.md", "# Parking\n\nLevel 2."), ("c.txt", "Lunch at noon.")])
        .await;
    wait_terminal(&t, &first, 3).await;
    assert!(all.terminate(Duration::from_secs(60)).await.success());

    let mut all = t.spawn(&["run", "all"], &[]);
    let second = format!("{}-second", t.workspace);
    let mut files: Vec<(String, String)> = (0..6).map(|i| (format!("doc-{i}.txt"), format!("Tài liệu số {i}: quy định số {i}."))).collect();
    files.push(("corrupt.pdf".into(), "%PDF-1.7\nthis is not a pdf body".into()));
    let files_ref: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    t.upload_files(&second, &files_ref).await;
    let done = wait_terminal(&t, &second, 7).await;
    assert_eq!(done["corrupt.pdf"], "failed");
    assert_eq!(done.values().filter(|s| *s == "ingested").count(), 6, "{done:?}");

    // Through the HTTP API, after another restart.
    assert!(all.terminate(Duration::from_secs(60)).await.success());
    let all = t.spawn(&["run", "all"], &[]);
    let (ok, token, err) = t.run(&["token", "--user", "alice", "--ttl", "10m"]).await;
    assert!(ok, "{err}");
    let token = token.trim().to_string();
    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{}", all.api_port);
    wait_until("the API", Duration::from_secs(60), || async {
        matches!(http.get(format!("{base}/readyz")).send().await, Ok(r) if r.status().is_success())
    })
    .await;
    let ws: serde_json::Value = http
        .post(format!("{base}/v1/workspaces"))
        .bearer_auth(&token)
        .json(&serde_json::json!({"name": "after-restart"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ws_id = ws["id"].as_str().unwrap().to_string();
    let part = reqwest::multipart::Part::bytes(b"The badge office opens at 8 am.".to_vec())
        .file_name("badges.txt")
        .mime_str("text/plain")
        .unwrap();
    let resp = http
        .post(format!("{base}/v1/workspaces/{ws_id}/documents"))
        .bearer_auth(&token)
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 202);
    wait_terminal(&t, &ws_id, 1).await;
    let (ok, out, err) = t.run(&["ask", "When does the badge office open?", "--workspace", &ws_id, "--json"]).await;
    assert!(ok, "{err}");
    let answer: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(answer.to_string().contains("8 am"), "the answer cites the document uploaded after the restart: {answer}");

    // What the broker says agrees: nothing committed past the log end.
    assert_committed_at_log_end(&t, "rag-parser", EventType::DocumentUploaded).await;
    assert_committed_at_log_end(&t, "rag-projector", EventType::DocumentUploaded).await;
    assert_committed_at_log_end(&t, "rag-projector", EventType::DocumentParsed).await;
    let (ok, report) = verify(&t, &[]).await;
    assert!(ok && report["clean"] == true, "{report:#}");
    assert_eq!(report["documents_checked"], 11);
    t.cleanup().await;
}

/// A document whose event every group was moved past (what the bug did) is
/// reported by `verify`, and `verify --repair` brings it through.
#[tokio::test(flavor = "multi_thread")]
async fn verify_reports_a_skipped_document_and_repair_recovers_it() {
    let t = TestEnv::new().await;
    t.upload_files(&t.workspace, &[("skipped.txt", "Nobody will process this sentence unless it is re-driven.")]).await;
    let bus = t.bus();
    let topic = bus.topics.of(EventType::DocumentUploaded);
    let ends = rag_bus::admin::watermarks(&bus, &topic).await.unwrap();
    // Move the parser (Kafka-owned) and the projector (Postgres-owned) past it.
    {
        use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
        let c: BaseConsumer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", &bus.brokers)
            .set("group.id", bus.group_of("rag-parser"))
            .create()
            .unwrap();
        let mut tpl = rdkafka::TopicPartitionList::new();
        for (p, _, high) in &ends {
            tpl.add_partition_offset(&topic, *p, rdkafka::Offset::Offset(*high)).unwrap();
        }
        c.commit(&tpl, CommitMode::Sync).unwrap();
    }
    for (p, _, high) in &ends {
        // The projector's stored offset at the log end: it claimed the last record.
        let mut tx = t.pool.begin().await.unwrap();
        let claim = rag_store::offsets::claim(&mut tx, &bus.group_of("rag-projector"), &topic, *p, high - 1).await.unwrap();
        assert_eq!(claim, rag_store::offsets::Claim::Apply);
        tx.commit().await.unwrap();
    }
    let _all = t.spawn(&["run", "all"], &[]);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(t.document_count().await, 0, "nothing processes the skipped event");

    let (ok, report) = verify(&t, &[]).await;
    assert!(!ok, "verify exits non-zero when something is stuck");
    let stuck = report["stuck"].as_array().unwrap();
    assert_eq!(stuck.len(), 1, "{report:#}");
    assert_eq!(stuck[0]["item"]["kind"], "document");
    assert_eq!(stuck[0]["status"], serde_json::Value::Null);
    assert_eq!(stuck[0]["root"]["topic"], topic.as_str());

    let (ok, report) = verify(&t, &["--repair"]).await;
    assert!(ok, "{report:#}");
    assert_eq!(report["redriven"].as_array().unwrap().len(), 1);
    let done = wait_terminal(&t, &t.workspace, 1).await;
    assert_eq!(done["skipped.txt"], "ingested");
    let (ok, report) = verify(&t, &[]).await;
    assert!(ok && report["clean"] == true, "{report:#}");
    t.cleanup().await;
}

/// A successful DocumentParsed of one empty page.
fn parsed_event(envelope: rag_events::Envelope, doc: &str) -> rag_events::DocumentParsed {
    rag_events::DocumentParsed {
        envelope,
        document_id: doc.to_string(),
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
        pages_without_text: Vec::new(),
        ocr_pages: Vec::new(),
        line_count: None,
        pages: Vec::new(),
        revision: 1,
    }
}

/// A failed document recovers whatever order its later steps are projected
/// in. Topics are projected independently: the DocumentParsed redriven
/// after the failure (it occurred before the failure) may land after the
/// DocumentChunked and DocumentIngested it led to (they occurred after).
/// Seen in CI as a document failed forever after a redrive.
#[tokio::test]
async fn a_failed_document_recovers_whatever_order_its_redriven_steps_land_in() {
    use rag_events::{DocumentChunked, DocumentIngested, Envelope, Failure};
    let t = TestEnv::new().await;
    let ws = t.workspace.clone();
    let orders: [[usize; 3]; 6] = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
    for order in orders {
        let doc = uuid::Uuid::now_v7().to_string();
        // The upstream parse, before the failure.
        let mut parsed_envelope = Envelope::originating(&ws, "upstream-parser");
        parsed_envelope.occurred_at -= 60_000;
        let parsed = parsed_event(parsed_envelope, &doc);
        // The failure: a failed chunking, 30 s after the parse.
        let mut failed_envelope = Envelope::caused_by(&parsed.envelope, "failed-chunker", "chunker");
        failed_envelope.occurred_at = parsed.envelope.occurred_at + 30_000;
        let failed = DocumentChunked {
            envelope: failed_envelope,
            document_id: doc.clone(),
            chunking_profile: "default".into(),
            chunking_version: "default@1".into(),
            chunk_count: None,
            chunks_uri: None,
            chunks_sha256: None,
            instructions_found: None,
            failure: Some(Failure { code: "blob_unreadable".into(), message: "NoSuchKey".into() }),
            revision: 1,
        };
        let mut tx = t.pool.begin().await.unwrap();
        rag_store::pipeline::apply_chunked(&mut tx, &failed, &[]).await.unwrap();
        tx.commit().await.unwrap();
        // After the redrive: the chunking and ingestion occur now.
        let chunked = DocumentChunked {
            envelope: Envelope::caused_by(&parsed.envelope, "chunker", "chunker"),
            failure: None,
            chunk_count: Some(0),
            ..failed.clone()
        };
        let ingested = DocumentIngested {
            envelope: Envelope::caused_by(&chunked.envelope, "embedder", "embedder"),
            document_id: doc.clone(),
            chunking_version: "default@1".into(),
            embedding_model: None,
            embedding_dimension: None,
            chunk_count: 0,
            failure: None,
            revision: 1,
        };
        let mut seen = Vec::new();
        for step in order {
            let mut tx = t.pool.begin().await.unwrap();
            match step {
                0 => rag_store::pipeline::apply_parsed(&mut tx, &parsed, &[]).await.unwrap(),
                1 => rag_store::pipeline::apply_chunked(&mut tx, &chunked, &[]).await.unwrap(),
                _ => rag_store::pipeline::apply_ingested(&mut tx, &ingested).await.unwrap(),
            }
            tx.commit().await.unwrap();
            seen.push(t.status_and_failure(&doc).await);
        }
        let last = seen.last().unwrap();
        assert_eq!(last, &("ingested".to_string(), None), "projected in the order {order:?}: statuses {seen:?}");
        // Until the run from the upload is unbroken the failure shows.
        let parsed_at = order.iter().position(|&s| s == 0).unwrap();
        for (i, (status, code)) in seen.iter().enumerate().take(parsed_at) {
            assert_eq!((status.as_str(), code.as_deref()), ("failed", Some("blob_unreadable")), "step {i} of {order:?}");
        }
    }
    t.cleanup().await;
}

/// The cases the time-based recovery got wrong: a second failure landing
/// after a first one, a projector dead letter stamped after the steps that
/// followed its event, and a dead-lettered upload redriven. A document
/// recovers when every failed step succeeds again, and only then.
#[tokio::test]
async fn a_document_recovers_when_its_failed_steps_succeed_again_and_only_then() {
    use rag_events::{DocumentChunked, DocumentIngested, DocumentUploaded, Envelope, Failure};
    use rag_store::documents::{mark_failed, DocumentStatus};
    let t = TestEnv::new().await;
    let ws = t.workspace.clone();
    let env = &t;
    let status = move |doc: String| async move { env.status_and_failure(&doc).await };
    let upload = |doc: &str| DocumentUploaded {
        envelope: Envelope::originating(&ws, "api"),
        document_id: doc.to_string(),
        blob_uri: "s3://b/k".into(),
        filename: "a.txt".into(),
        content_type: "text/plain".into(),
        size_bytes: 1,
        sha256: "0".into(),
        uploaded_by: "u".into(),
        metadata: Default::default(),
        revision: 1,
        replaces_sha256: None,
    };
    let parsed = |cause: &Envelope, doc: &str| parsed_event(Envelope::caused_by(cause, "parser", "parser"), doc);
    let chunked = |cause: &Envelope, doc: &str, failure: Option<&str>| DocumentChunked {
        envelope: Envelope::caused_by(cause, "chunker", "chunker"),
        document_id: doc.to_string(),
        chunking_profile: "default".into(),
        chunking_version: "default@1".into(),
        chunk_count: failure.is_none().then_some(0),
        chunks_uri: None,
        chunks_sha256: None,
        instructions_found: None,
        failure: failure.map(|c| Failure { code: c.into(), message: format!("{c} happened") }),
        revision: 1,
    };
    let ingested = |cause: &Envelope, doc: &str, failure: Option<&str>| DocumentIngested {
        envelope: Envelope::caused_by(cause, "embedder", "embedder"),
        document_id: doc.to_string(),
        chunking_version: "default@1".into(),
        embedding_model: None,
        embedding_dimension: None,
        chunk_count: 0,
        failure: failure.map(|c| Failure { code: c.into(), message: format!("{c} happened") }),
        revision: 1,
    };
    macro_rules! apply {
        ($call:path, $($arg:expr),*) => {{
            let mut tx = t.pool.begin().await.unwrap();
            $call(&mut tx, $($arg),*).await.unwrap();
            tx.commit().await.unwrap();
        }};
    }

    // 1. Chunking fails, is redriven and succeeds, then ingestion fails; the
    //    ingestion failure lands before the chunking's redriven success.
    let doc = uuid::Uuid::now_v7().to_string();
    let up = upload(&doc);
    let p = parsed(&up.envelope, &doc);
    let c_failed = chunked(&p.envelope, &doc, Some("blob_unreadable"));
    let c_ok = chunked(&p.envelope, &doc, None);
    let mut i_failed = ingested(&c_ok.envelope, &doc, Some("embedding_failed"));
    i_failed.envelope.occurred_at += 1_000;
    apply!(rag_store::documents::apply_uploaded, &up);
    apply!(rag_store::pipeline::apply_parsed, &p, &[]);
    apply!(rag_store::pipeline::apply_chunked, &c_failed, &[]);
    apply!(rag_store::pipeline::apply_ingested, &i_failed);
    apply!(rag_store::pipeline::apply_chunked, &c_ok, &[]);
    assert_eq!(status(doc.clone()).await, ("failed".into(), Some("embedding_failed".into())), "the later failure stands");
    apply!(rag_store::pipeline::apply_ingested, &ingested(&c_ok.envelope, &doc, None));
    assert_eq!(status(doc.clone()).await, ("ingested".into(), None));

    // 2. The projector dead-letters a DocumentChunked after the ingestion it
    //    led to occurred (and, in one order, was projected).
    for ingested_first in [true, false] {
        let doc = uuid::Uuid::now_v7().to_string();
        let up = upload(&doc);
        let p = parsed(&up.envelope, &doc);
        let c = chunked(&p.envelope, &doc, None);
        let i = ingested(&c.envelope, &doc, None);
        apply!(rag_store::documents::apply_uploaded, &up);
        apply!(rag_store::pipeline::apply_parsed, &p, &[]);
        if ingested_first {
            apply!(rag_store::pipeline::apply_ingested, &i);
        }
        let later = chrono::Utc::now() + chrono::Duration::seconds(30);
        let mut tx = t.pool.begin().await.unwrap();
        assert!(mark_failed(&mut tx, &doc, DocumentStatus::Chunked, "invalid_event", "poison", later).await.unwrap());
        tx.commit().await.unwrap();
        if !ingested_first {
            apply!(rag_store::pipeline::apply_ingested, &i);
            assert_eq!(status(doc.clone()).await.0, "failed", "a later step does not hide the dead letter");
        }
        // The redrive: the same DocumentChunked, projected now.
        apply!(rag_store::pipeline::apply_chunked, &c, &[]);
        assert_eq!(status(doc.clone()).await, ("ingested".into(), None), "ingested first: {ingested_first}");
    }

    // 3. A dead-lettered upload of a document whose later steps landed
    //    first, redriven.
    let doc = uuid::Uuid::now_v7().to_string();
    let up = upload(&doc);
    let p = parsed(&up.envelope, &doc);
    apply!(rag_store::pipeline::apply_parsed, &p, &[]);
    let mut tx = t.pool.begin().await.unwrap();
    assert!(mark_failed(&mut tx, &doc, DocumentStatus::Uploaded, "invalid_event", "poison", chrono::Utc::now()).await.unwrap());
    tx.commit().await.unwrap();
    assert_eq!(status(doc.clone()).await, ("failed".into(), Some("invalid_event".into())));
    apply!(rag_store::documents::apply_uploaded, &up);
    assert_eq!(status(doc.clone()).await, ("parsed".into(), None));
    t.cleanup().await;
}
