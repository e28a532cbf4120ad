//! Document pipeline on the real stack: upload -> parser -> chunker ->
//! indexer, with the projector keeping documents, segments and chunk
//! mappings current.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use crate::app::TestApp;
use crate::common::*;
use rag_store::sqlx;

const WAIT: Duration = Duration::from_secs(120);

fn docx(paragraphs: &[&str]) -> Vec<u8> {
    let body: String = paragraphs.iter().map(|p| format!("<w:p><w:r><w:t>{p}</w:t></w:r></w:p>")).collect();
    let xml = format!(
        r#"<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>"#
    );
    zip_of(&[("word/document.xml", xml.into_bytes())])
}

fn zip_of(files: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for (name, bytes) in files {
            z.start_file(*name, opts).unwrap();
            z.write_all(bytes).unwrap();
        }
        z.finish().unwrap();
    }
    buf.into_inner()
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(repo_root().join("crates/docparse/tests/fixtures").join(name)).unwrap()
}

async fn statuses(t: &TestEnv) -> HashMap<String, (String, Option<String>)> {
    let rows: Vec<(Option<String>, String, Option<String>)> =
        sqlx::query_as("SELECT filename, status, failure_code FROM documents").fetch_all(&t.pool).await.unwrap();
    rows.into_iter().map(|(f, s, c)| (f.unwrap_or_default(), (s, c))).collect()
}

async fn upload(t: &TestEnv, dir: &std::path::Path) -> serde_json::Value {
    let out = t.command(&["upload", dir.to_str().unwrap(), "--workspace", &t.workspace, "--json"]).output().await.unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

async fn count(t: &TestEnv, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(&t.pool).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_format_ingests_and_bad_inputs_fail_with_their_reason() {
    let t = TestEnv::new().await;
    let _all = TestApp::spawn(&t, &[("PARSE_MAX_BYTES", "2000000")]).await;
    let dir = std::env::temp_dir().join(format!("rag-engine-pipeline-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let w = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes).unwrap();
    w("notes.txt", "Chi phí vận chuyển tăng 7%.\n\nGiá nhiên liệu là nguyên nhân chính.".as_bytes());
    w("readme.md", "# Guide\n\nExpense reports are due on the fifth working day.".as_bytes());
    w("page.html", "<html><body><h1>Hướng dẫn</h1><p>Mỗi trích dẫn trỏ tới đoạn gốc.</p><script>x()</script></body></html>".as_bytes());
    w("bao-cao.pdf", &fixture("bao-cao-tai-chinh-2023.pdf"));
    w("scan.pdf", &fixture("scanned-second-page.pdf"));
    w("letter.docx", &docx(&["Kính gửi Quý cổ đông,", "Cổ tức năm 2023 là 15% bằng tiền mặt."]));
    let docai = serde_json::json!({"text": "Hóa đơn số 42\nTổng cộng 1.000.000 đồng\n",
        "pages": [{"paragraphs": [
            {"layout": {"textAnchor": {"textSegments": [{"endIndex": "14"}]}}},
            {"layout": {"textAnchor": {"textSegments": [{"startIndex": "14", "endIndex": "39"}]}}}]}]});
    w("ocr.json", docai.to_string().as_bytes());
    // Bad inputs.
    w("empty.txt", b"");
    w("corrupt.pdf", b"%PDF-1.7\nthis is not a pdf body");
    w("encrypted.pdf", &fixture("encrypted.pdf"));
    w("program.exe", b"MZ\x90\x00binary");
    w("latin1.txt", b"caf\xe9 cr\xe8me");
    w("bomb.docx", &zip_of(&[("word/document.xml", b"<w:document/>".to_vec()), ("word/media/z.bin", vec![0u8; 30 * 1024 * 1024])]));
    w("huge.txt", &vec![b'a'; 2_100_000]);
    let uploaded = upload(&t, &dir).await;
    assert_eq!(uploaded.as_array().unwrap().len(), 14);

    wait_until("every document settles", WAIT, || async {
        let s = statuses(&t).await;
        s.len() == 14 && s.values().all(|(st, _)| st == "ingested" || st == "failed")
    })
    .await;
    // Topics are projected independently: a document's DocumentIngested can
    // be projected before its DocumentChunked (the mappings) lands.
    wait_until("the mappings of every ingested document", WAIT, || async {
        count(
            &t,
            "SELECT count(*) FROM documents d WHERE status = 'ingested' AND NOT EXISTS
                       (SELECT 1 FROM chunk_mappings m WHERE m.document_id = d.id)",
        )
        .await
            == 0
    })
    .await;
    let s = statuses(&t).await;
    for good in ["notes.txt", "readme.md", "page.html", "bao-cao.pdf", "scan.pdf", "letter.docx", "ocr.json"] {
        assert_eq!(s[good].0, "ingested", "{good}: {:?}", s[good]);
    }
    let expect_failed = [
        ("empty.txt", "empty_file"),
        ("corrupt.pdf", "corrupt_pdf"),
        ("encrypted.pdf", "encrypted_pdf"),
        ("program.exe", "unsupported_content_type"),
        ("latin1.txt", "invalid_utf8"),
        ("bomb.docx", "decompression_bomb"),
        ("huge.txt", "too_large"),
    ];
    for (name, code) in expect_failed {
        assert_eq!(s[name], ("failed".to_string(), Some(code.to_string())), "{name}");
    }
    let reason: String =
        sqlx::query_scalar("SELECT failure_reason FROM documents WHERE filename = 'encrypted.pdf'").fetch_one(&t.pool).await.unwrap();
    assert!(reason.contains("password"), "{reason}");

    // The Vietnamese report keeps its pages; the viewer's JSON has them.
    let id: uuid::Uuid = sqlx::query_scalar("SELECT id FROM documents WHERE filename = 'bao-cao.pdf'").fetch_one(&t.pool).await.unwrap();
    let (ok, out, err) = t.run(&["docs", "segments", &id.to_string(), "--workspace", &t.workspace, "--json"]).await;
    assert!(ok, "{err}");
    let viewer: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(viewer["status"], "ingested");
    let segs = viewer["segments"].as_array().unwrap();
    let page_of = |needle: &str| segs.iter().find(|s| s["text"].as_str().unwrap().contains(needle)).unwrap()["page_idx"].as_i64().unwrap();
    assert_eq!(page_of("1.245,6 tỷ đồng"), 0);
    assert_eq!(page_of("Vốn chủ sở hữu"), 1);
    assert_eq!(page_of("Rủi ro tỷ giá"), 2);
    let pages: i32 = sqlx::query_scalar("SELECT page_count FROM documents WHERE id = $1").bind(id).fetch_one(&t.pool).await.unwrap();
    assert_eq!(pages, 3);
    let (ok, human, _) = t.run(&["docs", "segments", &id.to_string(), "--workspace", &t.workspace]).await;
    assert!(ok && human.contains("── page 2 ──") && human.contains("Vốn chủ sở hữu"), "{human}");
    // Another workspace cannot see it.
    let (ok, _, err) = t.run(&["docs", "segments", &id.to_string(), "--workspace", "intruder"]).await;
    assert!(!ok && err.contains("not found"), "{err}");

    // In every ingested document: segments tile the full text, each chunk's
    // range is the union of its segments', and the index holds that text.
    let blobs = t.blob_store();
    let docs: Vec<(uuid::Uuid, String, String)> =
        sqlx::query_as("SELECT id, full_text_uri, active_chunking_version FROM documents WHERE status = 'ingested'")
            .fetch_all(&t.pool)
            .await
            .unwrap();
    assert_eq!(docs.len(), 7);
    for (doc, uri, version) in docs {
        assert_eq!(version, "default@1");
        let full = String::from_utf8(blobs.get(blobs.key_of(&uri).unwrap()).await.unwrap()).unwrap();
        let segs = rag_store::raw::segments(&t.pool, &t.workspace, doc).await.unwrap();
        let rebuilt: String = segs.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(rebuilt, full, "segments tile the full text of {doc}");
        for s in &segs {
            assert_eq!(rag_docparse::char_slice(&full, s.char_start as u64, s.char_end as u64), s.text);
        }
        let maps = rag_store::raw::chunk_mappings(&t.pool, &t.workspace, doc).await.unwrap();
        assert!(!maps.is_empty());
        for m in &maps {
            let first = &segs[m.segment_start_index as usize];
            let last = &segs[m.segment_end_index as usize];
            assert_eq!((m.char_start, m.char_end), (first.char_start, last.char_end));
            assert_eq!((m.page_start, m.page_end), (first.page_idx, last.page_idx));
            let content: String = sqlx::query_scalar("SELECT content FROM search_chunks WHERE chunk_id = $1")
                .bind(&m.chunk_id)
                .fetch_one(&t.pool)
                .await
                .unwrap();
            assert_eq!(content, rag_docparse::char_slice(&full, m.char_start as u64, m.char_end as u64));
        }
    }
    // Vietnamese terms are indexed with diacritics and folded.
    assert!(count(&t, "SELECT count(*) FROM search_chunks WHERE 'vận' = ANY(terms)").await >= 1);
    assert!(count(&t, "SELECT count(*) FROM search_chunks WHERE '~van' = ANY(terms)").await >= 1);
    // Each term has its frequency, and the words (not their folded or stem
    // variants) add up to the chunk's length.
    assert_eq!(count(&t, "SELECT count(*) FROM search_chunks WHERE cardinality(terms) <> cardinality(tfs)").await, 0);
    assert_eq!(
        count(
            &t,
            "SELECT count(*) FROM search_chunks c WHERE term_count <>
               (SELECT coalesce(sum(tf), 0) FROM UNNEST(c.terms, c.tfs) AS p(term, tf) WHERE term NOT LIKE '~%' AND term NOT LIKE '^%')"
        )
        .await,
        0
    );

    // A re-delivered event changes nothing: produce every DocumentParsed and
    // DocumentChunked again, byte for byte.
    let before = (
        count(&t, "SELECT count(*) FROM segments").await,
        count(&t, "SELECT count(*) FROM chunk_mappings").await,
        count(&t, "SELECT count(*) FROM search_chunks").await,
        count(&t, "SELECT coalesce(sum(cardinality(terms)), 0)::int8 FROM search_chunks").await,
    );
    let producer = t.producer();
    for event in [rag_events::EventType::DocumentParsed, rag_events::EventType::DocumentChunked] {
        let topic = t.topics().of(event);
        for m in read_all(&t.env["KAFKA_BROKERS"], &topic).await {
            use rdkafka::Message;
            producer.send_raw(&topic, m.key(), m.payload().unwrap(), &[]).await.unwrap();
        }
    }
    let ingested_topic = t.topics().of(rag_events::EventType::DocumentIngested);
    wait_until("re-delivered events processed", WAIT, || async { read_all(&t.env["KAFKA_BROKERS"], &ingested_topic).await.len() >= 14 })
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = (
        count(&t, "SELECT count(*) FROM segments").await,
        count(&t, "SELECT count(*) FROM chunk_mappings").await,
        count(&t, "SELECT count(*) FROM search_chunks").await,
        count(&t, "SELECT coalesce(sum(cardinality(terms)), 0)::int8 FROM search_chunks").await,
    );
    assert_eq!(before, after, "re-delivery changed the read models");
    assert_eq!(statuses(&t).await, s, "re-delivery changed a status");

    // The next document still ingests.
    let next = std::env::temp_dir().join(format!("rag-engine-next-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&next).unwrap();
    std::fs::write(next.join("after.txt"), "Tài liệu tiếp theo vẫn được xử lý.").unwrap();
    upload(&t, &next).await;
    wait_until("the next document", WAIT, || async { statuses(&t).await.get("after.txt").map(|(s, _)| s == "ingested").unwrap_or(false) })
        .await;
    t.cleanup().await;
}

/// A dependency that stays down: the stage retries with backoff, then stops
/// without storing the offset and `run` exits non-zero; a restart with the
/// dependency back resumes at that very event, nothing lost.
#[tokio::test(flavor = "multi_thread")]
async fn a_transient_failure_that_outlives_its_retries_stops_the_stage_and_a_restart_resumes() {
    let t = TestEnv::new().await;
    let dead = format!("http://127.0.0.1:{}/v1", free_port());
    let mut failing = TestApp::spawn(
        &t,
        &[
            ("EMBEDDER", "openai"),
            ("EMBEDDING_BASE_URL", &dead),
            ("EMBEDDING_MODEL", "m"),
            ("EMBEDDING_DIMENSION", "4"),
            ("EMBEDDING_TIMEOUT_SECS", "1"),
            ("STAGE_MAX_RETRIES", "2"),
            ("STAGE_RETRY_BACKOFF_MS", "50"),
        ],
    )
    .await;
    let dir = std::env::temp_dir().join(format!("rag-engine-transient-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.txt"), "Một tài liệu chờ được lập chỉ mục.").unwrap();
    let (ok, _, err) = t.run(&["upload", dir.to_str().unwrap(), "--workspace", &t.workspace]).await;
    assert!(ok, "{err}");
    let (stage, ended) = failing.wait_for_a_task_to_end(WAIT).await;
    assert_eq!(stage, "indexer");
    assert!(ended.is_err(), "the stage that gave up ends with an error (and `run` fails)");
    let indexer = ["stage=\"indexer\""];
    assert!(failing.metric_sum("rag_stage_events_failed_total", &[indexer[0], "kind=\"transient\""]) >= 2.0, "it retried first");
    assert_eq!(failing.metric_sum("rag_stage_failures_total", &indexer), 1.0, "the failure is counted");
    assert_eq!(failing.metric_sum("rag_stage_dead_letters_total", &[]), 0.0, "nothing is dead-lettered");
    failing.stop().await;
    // `run all` stops every stage with the failed one, so the projector
    // may not have caught up: no row yet is fine, a final state is not.
    let st: Option<String> = sqlx::query_scalar("SELECT status FROM documents").fetch_optional(&t.pool).await.unwrap();
    assert!(
        matches!(st.as_deref(), None | Some("uploaded" | "parsed" | "chunked")),
        "not indexed, not failed: the event waits (status {st:?})"
    );

    let _fixed = TestApp::spawn(&t, &[]).await;
    wait_until("ingested after the restart", WAIT, || async {
        // No row yet is possible: the projector may not have run before the stop.
        sqlx::query_scalar::<_, String>("SELECT status FROM documents").fetch_optional(&t.pool).await.unwrap().as_deref()
            == Some("ingested")
    })
    .await;
    assert!(count(&t, "SELECT count(*) FROM search_chunks").await >= 1);
    t.cleanup().await;
}

/// A scanned page (a picture of text, no text layer) is read by tesseract
/// and its text lands on the right page; with OCR off the page is marked
/// as having no text, visibly.
#[tokio::test(flavor = "multi_thread")]
async fn a_scanned_page_goes_through_ocr_or_is_marked() {
    for (ocr, expect_ocr) in [("auto", true), ("off", false)] {
        let t = TestEnv::new().await;
        let _all = TestApp::spawn(&t, &[("OCR", ocr)]).await;
        let dir = std::env::temp_dir().join(format!("rag-engine-ocr-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("scan.pdf"), fixture("scanned-text-page.pdf")).unwrap();
        upload(&t, &dir).await;
        wait_until("ingested", Duration::from_secs(120), || async {
            statuses(&t).await.get("scan.pdf").map(|s| s.0.as_str()) == Some("ingested")
        })
        .await;
        let id = t.document_ids().await.remove(0);
        let (ok, out, err) = t.run(&["docs", "show", &id, "--workspace", &t.workspace, "--json"]).await;
        assert!(ok, "{err}");
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        let page2: Vec<String> =
            sqlx::query_scalar("SELECT text FROM segments WHERE page_idx = 1 ORDER BY segment_index").fetch_all(&t.pool).await.unwrap();
        if expect_ocr {
            assert_eq!(doc["ocr_pages"], serde_json::json!([1]), "{doc}");
            assert_eq!(doc["pages_without_text"], serde_json::json!([]));
            let text = page2.join("\n");
            for needle in ["Lợi nhuận gộp đạt 312 tỷ đồng", "Revenue grew in every region"] {
                assert!(text.contains(needle), "OCR text of page 2 lacks {needle:?}: {text:?}");
            }
        } else {
            assert_eq!(doc["pages_without_text"], serde_json::json!([1]), "{doc}");
            assert!(page2.is_empty());
            let (_, human, _) = t.run(&["docs", "show", &id, "--workspace", &t.workspace]).await;
            assert!(human.contains("no text:       page 2 (not searchable)"), "{human}");
        }
        t.cleanup().await;
    }
}
