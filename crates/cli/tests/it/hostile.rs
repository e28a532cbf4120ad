//! Hostile uploads against the running pipeline (the API and every stage in
//! one process, as `run all`): each is refused with its reason or read in
//! bounded memory, the process stays up, and the next ordinary upload is
//! ingested. The inputs are generated (`crates/docparse/src/tests/
//! hostile_inputs.rs`, shared with the parser's unit tests).

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::api_client::*;
use crate::app::TestApp;
use crate::common::*;

#[path = "../../../docparse/src/tests/hostile_inputs.rs"]
mod hostile_inputs;
use hostile_inputs::*;

const WAIT: Duration = Duration::from_secs(120);

fn header(m: &rdkafka::message::OwnedMessage, name: &str) -> Option<String> {
    use rdkafka::message::{Headers, Message};
    m.headers()?.iter().find(|h| h.key == name).and_then(|h| h.value).map(|v| String::from_utf8_lossy(v).to_string())
}

/// A workspace of `user`'s and its id.
async fn workspace(api: &Api, token: &str) -> String {
    let (s, ws) = api.post("/v1/workspaces", token, json!({"name": "hostile"})).await;
    assert_eq!(s, StatusCode::CREATED, "{ws}");
    ws["id"].as_str().unwrap().to_string()
}

/// Uploads and returns the document id.
async fn upload(api: &Api, ws: &str, token: &str, name: &str, content_type: &str, bytes: Vec<u8>) -> String {
    let (s, v) = api.upload(ws, token, name, content_type, bytes).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{name}: {v}");
    v["document_id"].as_str().unwrap().to_string()
}

/// Polls `check` until it gives a value.
async fn poll<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(start.elapsed() < timeout, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the document is `ingested` or `failed`; returns its row.
async fn settled(api: &Api, ws: &str, token: &str, id: &str) -> Value {
    let path = format!("/v1/workspaces/{ws}/documents/{id}");
    poll(&format!("document {id} to be ingested or failed"), WAIT, || async {
        let (_, d) = api.get(&path, token).await;
        matches!(d["status"].as_str(), Some("ingested" | "failed")).then_some(d)
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_uploads_fail_with_their_reason_and_the_pipeline_goes_on() {
    let t = TestEnv::new().await;
    // `run all` itself, as a process of its own, so its memory is its own.
    let run = t.spawn(&["run", "all"], &[]);
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let alice = token(&t, "alice").await;
    let ws = workspace(&api, &alice).await;

    let docai = docai_overlapping_anchors(2_000, 40_000);
    assert!(docai.len() < 1 << 20, "{} bytes", docai.len());
    let cases: Vec<(&str, &str, Vec<u8>, &str)> = vec![
        // Read now, with its text, instead of overflowing the stack.
        ("nested.html", "text/html", nested_html(200_000), "ingested"),
        ("form.pdf", "application/pdf", self_drawing_form_pdf(), "ingested"),
        ("pages.pdf", "application/pdf", blank_pages_pdf(5_000), "too_many_pages"),
        ("bomb.pdf", "application/pdf", flate_bomb_pdf(300 << 20), "decompression_bomb"),
        ("anchors.json", "application/json", docai, "output_too_large"),
        ("lie.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", lying_docx(64 << 20), "decompression_bomb"),
        ("huge-page.pdf", "application/pdf", huge_page_pdf(200), "ingested"),
    ];
    let started = Instant::now();
    let mut ids = Vec::new();
    for (name, ct, bytes, _) in &cases {
        ids.push(upload(&api, &ws, &alice, name, ct, bytes.clone()).await);
    }
    for ((name, _, _, want), id) in cases.iter().zip(&ids) {
        let d = settled(&api, &ws, &alice, id).await;
        match *want {
            "ingested" => assert_eq!(d["status"], "ingested", "{name}: {d}"),
            code => {
                assert_eq!((d["status"].as_str(), d["failure_code"].as_str()), (Some("failed"), Some(code)), "{name}: {d}");
                assert!(d["failure_reason"].as_str().is_some_and(|r| !r.is_empty()), "{name}: {d}");
            }
        }
    }
    eprintln!("all hostile uploads settled in {:.1} s", started.elapsed().as_secs_f64());
    // What the nesting and the self-drawing form hold is readable.
    let (_, raw) = api.get(&format!("/v1/workspaces/{ws}/documents/{}/raw-text", ids[0]), &alice).await;
    assert!(raw.to_string().contains("after the nesting"), "{raw}");
    let (_, raw) = api.get(&format!("/v1/workspaces/{ws}/documents/{}/raw-text", ids[1]), &alice).await;
    assert!(raw.to_string().contains("A page that draws a form"), "{raw}");

    // The 200-inch page renders at a bounded size.
    let resp = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{}/v1/workspaces/{ws}/documents/{}/pages/1/image", run.api_port, ids[6]))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let png = resp.bytes().await.unwrap();
    let (w, h) = (u32::from_be_bytes(png[16..20].try_into().unwrap()), u32::from_be_bytes(png[20..24].try_into().unwrap()));
    assert!(w <= rag_pageimage::MAX_SIDE_PX && h <= rag_pageimage::MAX_SIDE_PX && w > 1000, "{w} x {h}");

    // The next ordinary upload is ingested.
    let next = upload(&api, &ws, &alice, "after.txt", "text/plain", b"Badges are at the front desk.".to_vec()).await;
    assert_eq!(settled(&api, &ws, &alice, &next).await["status"], "ingested");

    // The process's memory: its peak (VmHWM) stays under the bound of
    // docs/performance.md ("Hostile inputs"): the parse workers' memory is
    // theirs (PARSER_MEMORY_MB each), the process holds at most the
    // largest original and its parsed text.
    let status = std::fs::read_to_string(format!("/proc/{}/status", run.child.id().unwrap())).unwrap();
    let kib = |key: &str| -> u64 {
        status.lines().find(|l| l.starts_with(key)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap()
    };
    let (peak, now) = (kib("VmHWM:") / 1024, kib("VmRSS:") / 1024);
    eprintln!("run all: peak resident memory {peak} MiB, now {now} MiB, after every hostile upload");
    assert!(peak < 1024, "run all peaked at {peak} MiB");
    let mut run = run;
    assert!(run.terminate(Duration::from_secs(30)).await.success());
    t.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_parser_that_dies_or_runs_out_of_time_fails_the_document_and_dead_letters_its_event() {
    let t = TestEnv::new().await;
    // A worker with little memory and time: a large text needs more than
    // 200 MiB of address space to be read (and fails in a second or two,
    // well within the deadline even on a loaded machine), and OCR of 100
    // blank pages takes far more than 20 s.
    let run = TestApp::spawn(&t, &[("PARSER_MEMORY_MB", "200"), ("PARSER_TIMEOUT_SECS", "20"), ("UPLOAD_MAX_BYTES", "104857600")]).await;
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let alice = token(&t, "alice").await;
    let ws = workspace(&api, &alice).await;
    let big = "Một câu tiếng Việt khá dài để làm đầy bộ nhớ của trình phân tích. ".repeat(600_000).into_bytes();
    let oom = upload(&api, &ws, &alice, "big.txt", "text/plain", big).await;
    let slow = upload(&api, &ws, &alice, "scan.pdf", "application/pdf", blank_pages_pdf(100)).await;
    let d = settled(&api, &ws, &alice, &oom).await;
    assert_eq!((d["status"].as_str(), d["failure_code"].as_str()), (Some("failed"), Some("out_of_memory")), "{d}");
    let d = settled(&api, &ws, &alice, &slow).await;
    assert_eq!((d["status"].as_str(), d["failure_code"].as_str()), (Some("failed"), Some("parser_timeout")), "{d}");

    // Both events are dead-lettered with the same codes; the stage goes on.
    let topic = t.topics().of(rag_events::EventType::DocumentUploaded);
    let mut codes: Vec<String> = poll("two dead letters", WAIT, || async {
        let codes: Vec<String> = read_all(&t.env["KAFKA_BROKERS"], &format!("{topic}.dlq"))
            .await
            .iter()
            .filter_map(|m| header(m, rag_bus::headers::DLQ_REASON_CODE))
            .collect();
        (codes.len() >= 2).then_some(codes)
    })
    .await;
    codes.sort();
    assert_eq!(codes, ["out_of_memory", "parser_timeout"]);
    let next = upload(&api, &ws, &alice, "after.txt", "text/plain", b"Badges are at the front desk.".to_vec()).await;
    assert_eq!(settled(&api, &ws, &alice, &next).await["status"], "ingested");
    t.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_document_that_took_its_parser_down_before_is_dead_lettered_after_the_last_attempt() {
    let t = TestEnv::new().await;
    // The event is on the log before any parser runs; two earlier tries
    // are on record (as two crashes of the whole process would leave them).
    let event = t.uploaded_event("crasher.txt");
    t.producer().send(&event).await.unwrap();
    for _ in 0..2 {
        rag_store::parse_attempts::begin(&t.pool, &event.envelope.event_id).await.unwrap();
    }
    let _run = TestApp::spawn(&t, &[("PARSER_MAX_ATTEMPTS", "2")]).await;
    let topic = t.topics().of(rag_events::EventType::DocumentUploaded);
    let dlq = poll("the dead letter", WAIT, || async {
        let dlq = read_all(&t.env["KAFKA_BROKERS"], &format!("{topic}.dlq")).await;
        (!dlq.is_empty()).then_some(dlq)
    })
    .await;
    assert_eq!(header(&dlq[0], rag_bus::headers::DLQ_REASON_CODE).as_deref(), Some("parser_crashed"));
    wait_until("the document marked failed", WAIT, || async {
        let id = event.document_id.parse().unwrap();
        let doc = rag_store::documents::get(&t.pool, &t.workspace, id).await.unwrap();
        doc.is_some_and(|d| d.failure_code.as_deref() == Some("parser_crashed"))
    })
    .await;
    t.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn run_all_stops_within_ten_seconds_in_the_middle_of_ocr_and_the_document_is_parsed_after_the_restart() {
    let t = TestEnv::new().await;
    let slow = [("OCR_MAX_PAGES", "60"), ("OCR_BUDGET_SECS", "600")];
    let mut run = t.spawn(&["run", "all"], &slow);
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let alice = token(&t, "alice").await;
    let ws = workspace(&api, &alice).await;
    let id = upload(&api, &ws, &alice, "scan.pdf", "application/pdf", blank_pages_pdf(60)).await;
    let pid = run.child.id().unwrap();
    wait_until("a parse worker running OCR", WAIT, || async { !group_of_worker(pid).is_empty() && ocr_running(pid) }).await;
    // Every process of the workers' groups: the workers and the OCR
    // programs they run.
    let workers: Vec<u32> = poll("a worker and its OCR program", WAIT, || async {
        let members: Vec<u32> = group_of_worker(pid).into_iter().flat_map(members_of_group).collect();
        (members.len() >= 2).then_some(members)
    })
    .await;
    let stopping = Instant::now();
    let status = run.terminate(Duration::from_secs(10)).await;
    eprintln!("run all stopped {:.2} s after SIGTERM ({status})", stopping.elapsed().as_secs_f64());
    // Nothing of the worker's process group is left.
    wait_until("the workers' process groups gone", Duration::from_secs(5), || async {
        workers.iter().all(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
    })
    .await;
    // After the restart the document is parsed once: its OCR budget is
    // spent on blank pages, so it fails with `no_text`.
    let run = t.spawn(&["run", "all"], &[("OCR_MAX_PAGES", "3")]);
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let d = settled(&api, &ws, &alice, &id).await;
    assert_eq!((d["status"].as_str(), d["failure_code"].as_str()), (Some("failed"), Some("no_text")), "{d}");
    let parsed = read_all(&t.env["KAFKA_BROKERS"], &t.topics().of(rag_events::EventType::DocumentParsed)).await;
    assert_eq!(parsed.len(), 1, "one DocumentParsed for the document");
    let mut run = run;
    assert!(run.terminate(Duration::from_secs(30)).await.success());
    t.cleanup().await;
}

/// The process ids of parse workers whose parent is `parent`.
fn group_of_worker(parent: u32) -> Vec<u32> {
    children(parent).into_iter().filter(|c| cmdline(*c).contains(rag_stages::parse_worker::WORKER_ARG)).collect()
}

/// Whether a parse worker of `parent` has an OCR program running.
fn ocr_running(parent: u32) -> bool {
    group_of_worker(parent).into_iter().flat_map(children).any(|p| {
        let c = cmdline(p);
        c.contains("pdftoppm") || c.contains("tesseract")
    })
}

/// The processes whose /proc/PID/stat field `n` (counted after the
/// parenthesised name, which may itself hold spaces: 1 is the parent, 2
/// the process group) is `value`.
fn processes_where(n: usize, value: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
            after.split_whitespace().nth(n).and_then(|p| p.parse::<u32>().ok()) == Some(value)
        })
        .collect()
}

fn children(parent: u32) -> Vec<u32> {
    processes_where(1, parent)
}

fn members_of_group(pgid: u32) -> Vec<u32> {
    processes_where(2, pgid)
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline")).map(|b| String::from_utf8_lossy(&b).replace('\0', " ")).unwrap_or_default()
}
