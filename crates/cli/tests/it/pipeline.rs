//! Document pipeline on the real stack: upload -> parser -> chunker ->
//! indexer, with the projector keeping documents, segments and chunk
//! mappings current.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use crate::app::TestApp;
use crate::common::*;
use rag_store::testing;

const WAIT: Duration = Duration::from_secs(120);

pub(crate) fn docx(paragraphs: &[&str]) -> Vec<u8> {
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
    let docs = t.documents().await.into_iter();
    docs.map(|d| (d.filename.unwrap_or_default(), (d.status.as_str().to_string(), d.failure_code))).collect()
}

async fn upload(t: &TestEnv, dir: &std::path::Path) -> serde_json::Value {
    let out = t.command(&["upload", dir.to_str().unwrap(), "--workspace", &t.workspace, "--json"]).output().await.unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every chunk of the search index, with its postings.
async fn chunks(t: &TestEnv) -> Vec<testing::StoredChunk> {
    testing::all_chunks(&t.pool).await.unwrap()
}

/// Chunks of the index that hold `term`.
async fn with_term(t: &TestEnv, term: &str) -> usize {
    chunks(t).await.iter().filter(|c| c.terms.iter().any(|x| x == term)).count()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_format_ingests_and_bad_inputs_fail_with_their_reason() {
    let t = TestEnv::new().await;
    let _all = TestApp::spawn(&t, &[("PARSE_MAX_BYTES", "2000000")]).await;
    let dir_scratch = crate::common::scratch_dir("rag-engine-pipeline");
    let dir = dir_scratch.path().to_path_buf();
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
        let mut unmapped = 0;
        for d in t.documents().await.into_iter().filter(|d| d.status.as_str() == "ingested") {
            unmapped += usize::from(testing::traces(&t.pool, Some(d.id)).await.unwrap().chunk_mappings == 0);
        }
        unmapped == 0
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
    let encrypted = t.find_document(&t.document_id("encrypted.pdf").await.to_string()).await.unwrap();
    let reason = encrypted.failure_reason.unwrap();
    assert!(reason.contains("password"), "{reason}");

    // The Vietnamese report keeps its pages; the viewer's JSON has them.
    let id = t.document_id("bao-cao.pdf").await;
    let (ok, out, err) = t.run(&["docs", "segments", &id.to_string(), "--workspace", &t.workspace, "--json"]).await;
    assert!(ok, "{err}");
    let viewer: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(viewer["status"], "ingested");
    let segs = viewer["segments"].as_array().unwrap();
    let page_of = |needle: &str| segs.iter().find(|s| s["text"].as_str().unwrap().contains(needle)).unwrap()["page_idx"].as_i64().unwrap();
    assert_eq!(page_of("1.245,6 tỷ đồng"), 0);
    assert_eq!(page_of("Vốn chủ sở hữu"), 1);
    assert_eq!(page_of("Rủi ro tỷ giá"), 2);
    let pages = t.find_document(&id.to_string()).await.unwrap().page_count;
    assert_eq!(pages, Some(3));
    let (ok, human, _) = t.run(&["docs", "segments", &id.to_string(), "--workspace", &t.workspace]).await;
    assert!(ok && human.contains("── page 2 ──") && human.contains("Vốn chủ sở hữu"), "{human}");
    // Another workspace cannot see it.
    let (ok, _, err) = t.run(&["docs", "segments", &id.to_string(), "--workspace", "intruder"]).await;
    assert!(!ok && err.contains("not found"), "{err}");

    // In every ingested document: segments tile the full text, each chunk's
    // range is the union of its segments', and the index holds that text.
    let blobs = t.blob_store();
    let docs: Vec<_> = t.documents().await.into_iter().filter(|d| d.status.as_str() == "ingested").collect();
    assert_eq!(docs.len(), 7);
    let contents: HashMap<String, String> = chunks(&t).await.into_iter().map(|c| (c.chunk_id, c.content)).collect();
    for d in docs {
        let (doc, version) = (d.id, d.active_chunking_version.unwrap());
        let uri = testing::full_text_uri(&t.pool, doc).await.unwrap().unwrap();
        assert_eq!(version, "default@1");
        let full = String::from_utf8(blobs.get(blobs.key_of(&uri).unwrap()).await.unwrap()).unwrap();
        let segs = rag_store::raw::segments(&t.pool, &t.workspace, doc, None).await.unwrap();
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
            let content = contents[&m.chunk_id].as_str();
            assert_eq!(content, rag_docparse::char_slice(&full, m.char_start as u64, m.char_end as u64));
        }
    }
    // Vietnamese terms are indexed with diacritics and folded.
    assert!(with_term(&t, "vận").await >= 1);
    assert!(with_term(&t, "~van").await >= 1);
    // Each term has its frequency, and the words (not their folded or stem
    // variants) add up to the chunk's length.
    let all = chunks(&t).await;
    assert_eq!(all.iter().filter(|c| c.terms.len() != c.tfs.len()).count(), 0);
    let words = |c: &testing::StoredChunk| -> i64 {
        c.terms.iter().zip(&c.tfs).filter(|(term, _)| !term.starts_with('~') && !term.starts_with('^')).map(|(_, tf)| i64::from(*tf)).sum()
    };
    assert_eq!(all.iter().filter(|c| i64::from(c.term_count) != words(c)).count(), 0);

    // A re-delivered event changes nothing: produce every DocumentParsed and
    // DocumentChunked again, byte for byte.
    let before = testing::traces(&t.pool, None).await.unwrap();
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
    let after = testing::traces(&t.pool, None).await.unwrap();
    assert_eq!(before, after, "re-delivery changed the read models");
    assert_eq!(statuses(&t).await, s, "re-delivery changed a status");

    // The next document still ingests.
    let next_scratch = crate::common::scratch_dir("rag-engine-next");
    let next = next_scratch.path().to_path_buf();
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
    let dir_scratch = crate::common::scratch_dir("rag-engine-transient");
    let dir = dir_scratch.path().to_path_buf();
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
    let st = t.only_status().await;
    assert!(
        matches!(st.as_deref(), None | Some("uploaded" | "parsed" | "chunked")),
        "not indexed, not failed: the event waits (status {st:?})"
    );

    let _fixed = TestApp::spawn(&t, &[]).await;
    wait_until("ingested after the restart", WAIT, || async {
        // No row yet is possible: the projector may not have run before the stop.
        t.only_status().await.as_deref() == Some("ingested")
    })
    .await;
    assert!(!chunks(&t).await.is_empty());
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
        let dir_scratch = crate::common::scratch_dir("rag-engine-ocr");
        let dir = dir_scratch.path().to_path_buf();
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
        let segments = rag_store::raw::segments(&t.pool, &t.workspace, id.parse().unwrap(), None).await.unwrap();
        let page2: Vec<String> = segments.into_iter().filter(|s| s.page_idx == 1).map(|s| s.text).collect();
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
