//! Foundation acceptance tests on the real stack (scripts/stack up).

use std::time::Duration;

use crate::common::*;
use rag_bus::headers;
use rdkafka::message::{Headers, Message};

const WAIT: Duration = Duration::from_secs(90);

fn header(m: &rdkafka::message::OwnedMessage, name: &str) -> Option<String> {
    m.headers()?.iter().find(|h| h.key == name).and_then(|h| h.value).map(|v| String::from_utf8_lossy(v).to_string())
}

#[tokio::test(flavor = "multi_thread")]
async fn upload_directory_projects_documents_and_shuts_down_cleanly() {
    let t = TestEnv::new().await;
    let mut projector = t.spawn(&["run", "projector"], &[]);

    let dir_scratch = scratch_dir("rag-engine-upload");
    let dir = dir_scratch.path();
    std::fs::write(dir.join("a.txt"), "Xin chào thế giới").unwrap();
    std::fs::create_dir_all(dir.join("nested")).unwrap();
    std::fs::write(dir.join("nested/b.md"), "# Báo cáo\n\nDoanh thu tăng 12%.").unwrap();
    std::fs::write(dir.join(".hidden"), "skip me").unwrap();
    let big = dir.join("big.bin");
    // Over the multipart threshold: goes up in parts.
    std::fs::write(&big, vec![7u8; 17 * 1024 * 1024]).unwrap();

    let (ok, stdout, stderr) =
        t.run(&["upload", dir.to_str().unwrap(), "--workspace", &t.workspace, "--meta", "team=finance", "--json"]).await;
    assert!(ok, "upload failed: {stderr}");
    let results: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let results = results.as_array().unwrap();
    assert_eq!(results.len(), 3, "hidden files are skipped: {stdout}");
    assert!(results.iter().all(|r| r["ok"] == true));

    // The originals are in S3 under content-addressed keys.
    let blobs = t.blob_store();
    for r in results {
        let key = blobs.key_of(r["blob_uri"].as_str().unwrap()).unwrap().to_string();
        assert!(key.ends_with(r["sha256"].as_str().unwrap()));
        assert_eq!(blobs.head(&key).await.unwrap(), Some(r["size_bytes"].as_u64().unwrap()));
    }

    // DocumentUploaded is on the topic, keyed by document id, with headers.
    let topic = t.topics().of(rag_events::EventType::DocumentUploaded);
    let records = read_all(&t.env["KAFKA_BROKERS"], &topic).await;
    assert_eq!(records.len(), 3);
    for m in &records {
        let event: rag_events::DocumentUploaded = t.codec.decode(m.payload().unwrap()).unwrap();
        assert_eq!(m.key().unwrap(), event.document_id.as_bytes());
        assert_eq!(header(m, headers::EVENT_TYPE).as_deref(), Some("DocumentUploaded"));
        assert_eq!(event.envelope.workspace_id, t.workspace);
        assert_eq!(event.metadata.get("team").map(String::as_str), Some("finance"));
    }

    // ... and the projector turned them into documents rows.
    wait_until("3 documents", WAIT, || async { t.document_count().await == 3 }).await;
    let (ok, stdout, _) = t.run(&["docs", "list", "--workspace", &t.workspace, "--json"]).await;
    assert!(ok);
    let docs: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let mut names: Vec<_> = docs.as_array().unwrap().iter().map(|d| d["filename"].as_str().unwrap().to_string()).collect();
    names.sort();
    assert_eq!(names, ["a.txt", "b.md", "big.bin"]);
    assert!(docs.as_array().unwrap().iter().all(|d| d["status"] == "uploaded"));
    let (ok, human, _) = t.run(&["docs", "list", "--workspace", &t.workspace]).await;
    assert!(ok && human.contains("b.md") && human.contains("3 document(s)"), "{human}");
    // Another workspace sees nothing.
    let (ok, other, _) = t.run(&["docs", "list", "--workspace", "someone-else", "--json"]).await;
    assert!(ok);
    assert_eq!(other.trim(), "[]");

    // The stage exports its lag and counters.
    wait_until("lag metrics", WAIT, || async {
        let m = projector.metrics().await;
        m.contains("rag_consumer_lag_messages{") && sum_metric(&m, "rag_stage_events_in_total", &["stage=\"projector\""]) >= 3.0
    })
    .await;
    wait_until("lag back to zero", WAIT, || async {
        projector.metric_sum("rag_consumer_lag_messages", &["stage=\"projector\""]).await == 0.0
    })
    .await;

    // SIGTERM: finishes, commits to Kafka, leaves the group, exits 0.
    let status = projector.terminate(Duration::from_secs(30)).await;
    assert!(status.success(), "projector exit status {status:?}");
    t.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn undecodable_message_goes_to_dlq_and_the_next_one_is_processed() {
    let t = TestEnv::new().await;
    let producer = t.producer();
    let first = t.uploaded_event("first.txt");
    producer.send(&first).await.unwrap();
    let topic = t.topics().of(rag_events::EventType::DocumentUploaded);
    // Same key as `first`, so it lands on the same partition, after it.
    let poison = producer.send_raw(&topic, Some(first.document_id.as_bytes()), b"\x00garbage, not avro", &[]).await.unwrap();
    let next = t.uploaded_event("next.txt");
    producer.send(&next).await.unwrap();

    let _projector = t.spawn(&["run", "projector"], &[]);
    wait_until("the next document", WAIT, || async { t.document_ids().await.contains(&next.document_id) }).await;

    // The poison message is in the DLQ with its reason and origin.
    let dlq = read_all(&t.env["KAFKA_BROKERS"], &format!("{topic}.dlq")).await;
    assert_eq!(dlq.len(), 1);
    let m = &dlq[0];
    assert_eq!(m.payload().unwrap(), b"\x00garbage, not avro");
    assert_eq!(header(m, headers::DLQ_ORIGINAL_TOPIC).as_deref(), Some(topic.as_str()));
    assert_eq!(header(m, headers::DLQ_ORIGINAL_PARTITION), Some(poison.partition.to_string()));
    assert_eq!(header(m, headers::DLQ_ORIGINAL_OFFSET), Some(poison.offset.to_string()));
    assert_eq!(header(m, headers::DLQ_STAGE).as_deref(), Some("projector"));
    assert_eq!(header(m, headers::DLQ_REASON_CODE).as_deref(), Some("not_single_object"));
    assert!(header(m, headers::DLQ_REASON).unwrap().contains("single-object"));

    // The document the poison message was keyed by is marked failed, with the reason.
    let doc = t.find_document(&first.document_id).await.unwrap();
    assert_eq!(doc.status.as_str(), "failed");
    assert!(doc.failure_reason.unwrap().contains("single-object"));
    // Three records consumed, the stored offsets moved past all of them.
    wait_until("offsets past the poison message", WAIT, || async { t.stored_offsets_sum("rag-projector").await == 3 }).await;
    t.cleanup().await;
}

async fn crash_and_restart(failpoint: &str) {
    let t = TestEnv::new().await;
    let producer = t.producer();
    let mut expected = Vec::new();
    for i in 0..8 {
        let e = t.uploaded_event(&format!("doc-{i}.txt"));
        expected.push(e.document_id.clone());
        producer.send(&e).await.unwrap();
    }
    expected.sort();

    let mut crashing = t.spawn(&["run", "projector"], &[("RAG_ENGINE_FAILPOINT", failpoint)]);
    crashing.wait_for_failpoint(WAIT).await;
    crashing.sigkill().await;
    let before = t.document_count().await;
    assert!(before < 8, "the crash happened mid-stream ({before} rows)");

    let _restarted = t.spawn(&["run", "projector"], &[]);
    wait_until("all 8 documents", WAIT, || async { t.document_count().await >= 8 }).await;
    // Give a re-delivery every chance to double something.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(t.document_ids().await, expected, "exactly one row per document");
    assert_eq!(t.stored_offsets_sum("rag-projector").await, 8);
    t.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_after_database_commit_before_kafka_commit_leaves_one_row_per_document() {
    crash_and_restart("projector-after-commit:3").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_after_writing_rows_before_database_commit_leaves_one_row_per_document() {
    crash_and_restart("projector-before-commit:3").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn two_projectors_split_the_partitions_and_write_no_duplicates() {
    let t = TestEnv::new().await;
    let assignments = |p: &Process| {
        let p = p.metrics_port;
        async move { sum_metric(&metrics_of(p).await, "rag_consumer_rebalances_total", &["kind=\"assign\""]) }
    };
    let a = t.spawn(&["run", "projector"], &[]);
    wait_until("a assigned", WAIT, || async { assignments(&a).await >= 1.0 }).await;
    let b = t.spawn(&["run", "projector"], &[]);
    wait_until("b assigned", WAIT, || async { assignments(&b).await >= 1.0 }).await;
    // Let the group settle: a rebalance gave `a` its share again.
    wait_until("a reassigned after b joined", WAIT, || async { assignments(&a).await >= 2.0 }).await;

    let producer = t.producer();
    let mut expected = Vec::new();
    for i in 0..40 {
        let e = t.uploaded_event(&format!("doc-{i}.txt"));
        expected.push(e.document_id.clone());
        producer.send(&e).await.unwrap();
    }
    expected.sort();
    wait_until("40 documents", WAIT, || async { t.document_count().await >= 40 }).await;
    assert_eq!(t.document_ids().await, expected);
    assert_eq!(t.stored_offsets_sum("rag-projector").await, 40);

    let in_a = a.metric_sum("rag_stage_events_in_total", &["stage=\"projector\""]).await;
    let in_b = b.metric_sum("rag_stage_events_in_total", &["stage=\"projector\""]).await;
    assert!(in_a > 0.0 && in_b > 0.0, "both instances consumed: a={in_a} b={in_b}");
    assert_eq!(in_a + in_b, 40.0, "each event was consumed by exactly one instance");
    t.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn upload_reports_bad_files_and_keeps_going() {
    let t = TestEnv::new().await;
    let dir_scratch = scratch_dir("rag-engine-upload-bad");
    let dir = dir_scratch.path();
    std::fs::write(dir.join("ok.txt"), "small").unwrap();
    std::fs::write(dir.join("huge.txt"), "x".repeat(5000)).unwrap();
    let out =
        t.command(&["upload", dir.to_str().unwrap(), "--workspace", &t.workspace]).env("UPLOAD_MAX_BYTES", "1000").output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a failed file makes the command fail");
    assert!(stderr.contains("huge.txt") && stderr.contains("UPLOAD_MAX_BYTES"), "{stderr}");
    assert!(stdout.contains("1 uploaded, 1 failed"), "{stdout}");

    // A bad workspace id and a missing path are clear errors.
    let (ok, _, err) = t.run(&["upload", dir.to_str().unwrap(), "--workspace", "../etc"]).await;
    assert!(!ok && err.contains("invalid workspace id"), "{err}");
    let (ok, _, err) = t.run(&["upload", "/definitely/not/here", "--workspace", &t.workspace]).await;
    assert!(!ok && err.contains("/definitely/not/here"), "{err}");
    t.cleanup().await;
}
