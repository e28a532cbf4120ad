//! Operations on the real stack: deletion purges a document everywhere
//! while answers keep the text they cited.

use std::time::Duration;

use crate::app::TestApp;
use crate::common::*;
use rag_store::testing;

const LIGHTHOUSE: &str =
    "The lighthouse keeper lit the lamp every evening at dusk.\n\nThe lighthouse stands on a granite cliff above the harbour.\n";
const HANOI: &str = "# Hà Nội\n\nHà Nội là thủ đô của Việt Nam. Thành phố nằm bên bờ sông Hồng.\n";

/// The document's search chunks, their terms, its chunk mappings and segments.
async fn traces(t: &TestEnv, doc: uuid::Uuid) -> [i64; 4] {
    let tr = testing::traces(&t.pool, Some(doc)).await.unwrap();
    [tr.search_chunks, tr.terms, tr.chunk_mappings, tr.segments]
}

#[tokio::test]
async fn deletion_leaves_no_trace_and_answers_keep_their_citations() {
    let t = TestEnv::new().await;
    let run = TestApp::spawn(&t, &[]).await;
    let ws = t.workspace.clone();
    // Two documents with the same bytes share one stored original.
    t.upload_files(&ws, &[("lighthouse.txt", LIGHTHOUSE), ("lighthouse-copy.txt", LIGHTHOUSE), ("ha-noi.md", HANOI)]).await;
    wait_until("three documents ingested", Duration::from_secs(120), || async { t.ingested_count().await == 3 }).await;
    let (ok, out, err) = t.run(&["ask", "Where does the lighthouse stand?", "--workspace", &ws, "--json", "--timeout", "60"]).await;
    assert!(ok, "{err}");
    let answer: serde_json::Value = serde_json::from_str(&out).unwrap();
    let cited = answer["metadata"]["citations"][0].clone();
    assert!(cited["text"].as_str().is_some_and(|s| s.contains("lighthouse")), "{answer}");
    let doc: uuid::Uuid = cited["document_id"].as_str().unwrap().parse().unwrap();
    let docs = t.documents().await;
    let cited_doc = docs.iter().find(|d| d.id == doc).unwrap();
    let (filename, blob_uri) = (cited_doc.filename.clone().unwrap(), cited_doc.blob_uri.clone().unwrap());
    let twins: Vec<uuid::Uuid> = docs.iter().filter(|d| d.blob_uri.as_ref() == Some(&blob_uri) && d.id != doc).map(|d| d.id).collect();
    assert_eq!(twins.len(), 1, "one twin shares the original: {twins:?}");
    let twin = twins[0];
    assert!(traces(&t, doc).await.iter().all(|n| *n > 0), "indexed before the deletion");
    let blobs = t.blob_store();
    let derived = format!("w/{ws}/d/{doc}/");
    assert!(!blobs.list(&derived).await.unwrap().is_empty());

    let (ok, _, err) = t.run(&["docs", "delete", &doc.to_string(), "--workspace", &ws]).await;
    assert!(ok, "{err}");
    wait_until("the purge", Duration::from_secs(60), || async { traces(&t, doc).await == [0, 0, 0, 0] }).await;
    assert!(blobs.list(&derived).await.unwrap().is_empty(), "derived blobs are deleted");
    let original = blobs.key_of(&blob_uri).unwrap().to_string();
    assert!(blobs.head(&original).await.unwrap().is_some(), "{filename}: the original is kept while its twin uses it");
    let (status, _) = t.status_and_failure(&doc.to_string()).await;
    assert_eq!(status, "deleted");
    let (ok, out, _) = t.run(&["search", "lighthouse granite cliff", "--workspace", &ws, "--json"]).await;
    assert!(ok);
    assert!(!out.contains(&doc.to_string()), "search no longer finds the deleted document: {out}");
    let (ok, _, _) = t.run(&["docs", "show", &doc.to_string(), "--workspace", &ws]).await;
    assert!(ok, "the tombstone stays visible to operators");

    // The answer given before keeps the text it cited.
    let message: uuid::Uuid = answer["id"].as_str().unwrap().parse().unwrap();
    let metadata = rag_store::messages::get(&t.pool, &ws, message).await.unwrap().unwrap().metadata;
    assert_eq!(metadata["citations"][0]["text"], cited["text"]);
    assert_eq!(metadata["sections"], answer["metadata"]["sections"]);

    // The twin's deletion removes the shared original too.
    let (ok, _, err) = t.run(&["docs", "delete", &twin.to_string(), "--workspace", &ws]).await;
    assert!(ok, "{err}");
    wait_until("the twin's purge", Duration::from_secs(60), || async { traces(&t, twin).await == [0, 0, 0, 0] }).await;
    wait_until("the original's deletion", Duration::from_secs(30), || async { blobs.head(&original).await.unwrap().is_none() }).await;
    // Deleting twice is refused; the other document is untouched.
    let (ok, _, err) = t.run(&["docs", "delete", &doc.to_string(), "--workspace", &ws]).await;
    assert!(!ok && err.contains("not found"), "{err}");
    let hanoi = testing::traces(&t.pool, Some(t.document_id("ha-noi.md").await)).await.unwrap().search_chunks;
    assert!(hanoi > 0);
    run.stop().await;
    t.cleanup().await;
}

/// A DocumentParsed whose claim-checked segments are missing (an upstream
/// parser wrote the event before its blob) is a poison message for the
/// projector: dead-lettered, listed, shown, and redriven once the blob is
/// there; the document then recovers from its failure and ingests.
#[tokio::test]
async fn a_poison_message_is_listed_shown_and_redriven_after_the_fix() {
    let t = TestEnv::new().await;
    let run = TestApp::spawn(&t, &[]).await;
    let ws = t.workspace.clone();
    let parsed = rag_docparse::parse(LIGHTHOUSE.as_bytes(), "text/plain", "lighthouse.txt", &rag_docparse::Limits::default()).unwrap();
    let segments = serde_json::to_vec(&parsed.segments).unwrap();
    let sha = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(&segments))
    };
    let doc = uuid::Uuid::now_v7().to_string();
    let blobs = t.blob_store();
    let key = format!("w/{ws}/d/{doc}/segments-upstream/{}.json", &sha[..32]);
    let event = rag_events::DocumentParsed {
        envelope: rag_events::Envelope::originating(&ws, "upstream-parser"),
        document_id: doc.clone(),
        parser_name: "upstream".into(),
        parser_version: "1".into(),
        page_count: Some(1),
        segment_count: Some(parsed.segments.len() as i32),
        char_count: Some(LIGHTHOUSE.chars().count() as i64),
        full_text_uri: None,
        full_text_sha256: None,
        segments_uri: Some(blobs.uri(&key)),
        segments_sha256: Some(sha.clone()),
        failure: None,
        pages_without_text: Vec::new(),
        ocr_pages: Vec::new(),
        line_count: None,
        pages: Vec::new(),
        revision: 1,
    };
    t.producer().send(&event).await.unwrap();
    let status = || async { t.find_document(&doc).await.map(|d| (d.status.as_str().to_string(), d.failure_code)) };
    wait_until("the document marked failed", Duration::from_secs(60), || async { matches!(status().await, Some((s, _)) if s == "failed") })
        .await;

    let list = || async {
        let (ok, out, err) = t.run(&["dlq", "list", "--topic", "documents.parsed", "--json"]).await;
        assert!(ok, "{err}");
        serde_json::from_str::<Vec<serde_json::Value>>(&out).unwrap()
    };
    wait_until("the dead letter", Duration::from_secs(30), || async { !list().await.is_empty() }).await;
    let letters = list().await;
    assert_eq!(letters.len(), 1, "{letters:?}");
    let letter = &letters[0];
    assert_eq!(letter["stage"], "projector");
    assert_eq!(letter["reason_code"], "blob_unreadable");
    assert_eq!(letter["key"], doc.as_str());
    assert_eq!(letter["event_type"], "DocumentParsed");
    let (ok, human, _) = t.run(&["dlq", "list", "--topic", "documents.parsed"]).await;
    assert!(ok && human.contains("blob_unreadable") && human.contains("1 dead letter(s)"), "{human}");

    let (partition, offset) = (letter["partition"].to_string(), letter["offset"].to_string());
    let (ok, out, err) =
        t.run(&["dlq", "show", "--topic", "documents.parsed", "--partition", &partition, "--offset", &offset, "--json"]).await;
    assert!(ok, "{err}");
    let shown: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(shown["event"]["document_id"], doc.as_str());
    assert_eq!(shown["event"]["segments_uri"], blobs.uri(&key).as_str());
    assert!(shown["headers"]["dlq-reason"].as_str().unwrap().contains("NoSuchKey"), "{shown}");

    // The fix: the blob arrives. Then the redrive.
    blobs.put_bytes(&key, segments, "application/json").await.unwrap();
    let (ok, out, err) =
        t.run(&["dlq", "redrive", "--topic", "documents.parsed", "--partition", &partition, "--offset", &offset, "--json"]).await;
    assert!(ok, "{err}");
    let redriven: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(redriven.as_array().unwrap().len(), 1);
    assert_eq!(redriven[0]["topic"], t.topics().of(rag_events::EventType::DocumentParsed).as_str());
    // Topics are projected independently: the redriven DocumentParsed's
    // segments may land after the document's DocumentIngested.
    let segments = || async { testing::traces(&t.pool, Some(doc.parse().unwrap())).await.unwrap().segments };
    wait_until("the document recovered, ingested and its segments projected", Duration::from_secs(90), || async {
        matches!(status().await, Some((s, None)) if s == "ingested") && segments().await >= parsed.segments.len() as i64
    })
    .await;
    assert_eq!(segments().await, parsed.segments.len() as i64);
    let (ok, out, _) = t.run(&["search", "granite cliff", "--workspace", &ws, "--json"]).await;
    assert!(ok && out.contains(&doc), "the redriven document is searchable: {out}");
    let (ok, _, err) = t.run(&["dlq", "redrive", "--topic", "documents.parsed"]).await;
    assert!(!ok && err.contains("--all"), "a redrive must say which letters: {err}");
    run.stop().await;
    t.cleanup().await;
}

/// Re-chunking by replay while questions keep coming: every answer reads
/// exactly one version of each document, and afterwards only the new
/// version remains.
#[tokio::test]
async fn replaying_chunking_flips_versions_while_questions_keep_being_answered() {
    let t = TestEnv::new().await;
    let run = TestApp::spawn(&t, &[]).await;
    let ws = t.workspace.clone();
    let long = |topic: &str| {
        (0..12)
            .map(|i| format!("Paragraph {i} about the {topic}. The {topic} has a long history, and the keepers wrote down every storm, every ship and every repair of the {topic} in their logbook number {i}."))
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    let (a, b, c) = (long("lighthouse"), long("harbour"), long("granite cliff"));
    t.upload_files(&ws, &[("a.txt", a.as_str()), ("b.txt", b.as_str()), ("c.txt", c.as_str()), ("ha-noi.md", HANOI)]).await;
    wait_until("four documents ingested on default@1", Duration::from_secs(120), || async {
        let docs = t.documents().await;
        docs.iter().filter(|d| d.status.as_str() == "ingested" && d.active_chunking_version.as_deref() == Some("default@1")).count() == 4
    })
    .await;
    let before: i64 = t.documents().await.iter().filter_map(|d| d.chunk_count).map(i64::from).sum();

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let asker = {
        let (stop, env, ws) = (stop.clone(), t.env.clone(), ws.clone());
        tokio::spawn(async move {
            let mut answers = Vec::new();
            let questions =
                ["What did the keepers write in the logbook?", "Tell me about the harbour storms", "Thủ đô của Việt Nam là gì?"];
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) || answers.len() < 4 {
                let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_rag-engine"))
                    .args(["ask", questions[i % questions.len()], "--workspace", &ws, "--json", "--timeout", "60"])
                    .envs(&env)
                    .output()
                    .await
                    .unwrap();
                answers.push((
                    out.status.success(),
                    String::from_utf8_lossy(&out.stdout).to_string(),
                    String::from_utf8_lossy(&out.stderr).to_string(),
                ));
                i += 1;
            }
            answers
        })
    };
    let (ok, out, err) = t.run(&["replay", "chunking", "--profile", "fine@1", "--workspace", &ws, "--json", "--timeout", "180"]).await;
    assert!(ok, "{out}\n{err}");
    let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["documents"], 4, "{summary}");
    assert_eq!(summary["documents_on_new_version"], 4, "{summary}");
    assert!(summary["chunks"].as_i64().unwrap() > before, "a finer profile gives more chunks: {summary} vs {before}");
    assert!(summary["duration_seconds"].as_f64().unwrap() > 0.0);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let answers = asker.await.unwrap();
    for (ok, out, err) in &answers {
        assert!(ok, "every question is answered during the replay: {out}\n{err}");
        let m: serde_json::Value = serde_json::from_str(out).unwrap();
        assert_eq!(m["status"], "done");
        let mut versions: std::collections::HashMap<String, std::collections::BTreeSet<String>> = Default::default();
        for c in m["metadata"]["retrieval"]["chunks"].as_array().unwrap() {
            versions.entry(c["document_id"].as_str().unwrap().into()).or_default().insert(c["chunking_version"].as_str().unwrap().into());
        }
        assert!(versions.values().all(|v| v.len() == 1), "one version per document in an answer: {versions:?}");
    }
    let chunks = testing::all_chunks(&t.pool).await.unwrap().into_iter().map(|c| c.chunking_version);
    let mapped = testing::mapped_chunking_versions(&t.pool).await.unwrap();
    let left: Vec<String> = chunks.chain(mapped).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    assert_eq!(left, ["fine@1"], "the old version is removed after the flip");
    let doc = t.document_id("a.txt").await.to_string();
    let (ok, out, _) = t.run(&["docs", "show", &doc, "--workspace", &ws, "--json"]).await;
    assert!(ok);
    let shown: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(shown["active_chunking_version"], "fine@1");
    assert!(shown["chunks"].as_array().unwrap().iter().all(|c| c["chunking_version"] == "fine@1"));
    run.stop().await;
    t.cleanup().await;
}
