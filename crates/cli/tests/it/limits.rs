//! What one user may take of the API: each limit answers 429 with
//! Retry-After (docs/api.md, "Limits"), a slow client loses its
//! connection, and an event stream ends with its token.

use std::time::{Duration, Instant};

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::api_client::*;
use crate::app::TestApp;
use crate::common::*;
use rag_app::run::StageName;

fn retry_after(headers: &reqwest::header::HeaderMap) -> u64 {
    headers.get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok()).expect("a Retry-After header")
}

#[tokio::test(flavor = "multi_thread")]
async fn each_limit_answers_429_with_retry_after() {
    let t = TestEnv::new().await;
    let run = TestApp::spawn_stages(
        &t,
        StageName::Api,
        &[
            ("API_RATE_PER_SEC", "100"),
            ("API_RATE_BURST", "1000"),
            ("API_QUESTIONS_PER_MINUTE", "2"),
            ("API_STREAMS_PER_USER", "1"),
            ("API_UPLOADS_PER_USER", "1"),
        ],
    )
    .await;
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let (alice, bob) = (token(&t, "alice").await, token(&t, "bob").await);
    let (_, ws) = api.post("/v1/workspaces", &alice, json!({"name": "limits"})).await;
    let ws = ws["id"].as_str().unwrap().to_string();
    let (_, conv) = api.post(&format!("/v1/workspaces/{ws}/conversations"), &alice, json!({})).await;
    let conv = conv["id"].as_str().unwrap().to_string();

    // Questions per minute.
    let ask = format!("/v1/workspaces/{ws}/conversations/{conv}/messages");
    for _ in 0..2 {
        assert_eq!(api.post(&ask, &alice, json!({"content": "Where are badges?"})).await.0, StatusCode::ACCEPTED);
    }
    let (s, body, headers) = api.call(reqwest::Method::POST, &ask, Some(&alice), Some(json!({"content": "again?"}))).await;
    assert_eq!((s, body["error"]["code"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("too_many_questions")), "{body}");
    assert!(retry_after(&headers) >= 1);

    // Event streams at once: the second is refused while the first is open.
    let events = format!("/v1/workspaces/{ws}/conversations/{conv}/events");
    let first = api.http.get(format!("{}{events}", api.base)).bearer_auth(&alice).send().await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    let second = api.http.get(format!("{}{events}", api.base)).bearer_auth(&alice).send().await.unwrap();
    assert_eq!(second.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(retry_after(second.headers()) >= 1);
    assert_eq!(second.json::<serde_json::Value>().await.unwrap()["error"]["code"], "too_many_streams");
    // The server notices a closed stream at its next write (a keep-alive
    // comment at the latest, every 15 s); then the slot is free again.
    drop(first);
    let freed = Instant::now();
    loop {
        let again = api.http.get(format!("{}{events}", api.base)).bearer_auth(&alice).send().await.unwrap();
        if again.status() == StatusCode::OK {
            break;
        }
        assert_eq!(again.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(freed.elapsed() < Duration::from_secs(40), "the slot of a closed stream was not released");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    // Uploads at once: one still streaming in holds the only slot. The
    // slow upload takes its slot only once its request reaches the
    // handler; a probe that gets there first holds the slot itself and the
    // slow upload is refused. Then the race is run again: nothing tells the
    // client when its request has reached the handler.
    let mut attempts = 0;
    let (tx, slow, s, v) = loop {
        attempts += 1;
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(4);
        let body = reqwest::Body::wrap_stream(tokio_stream_of(rx));
        let part = reqwest::multipart::Part::stream(body).file_name("slow.txt").mime_str("text/plain").unwrap();
        let form = reqwest::multipart::Form::new().part("file", part);
        // A client of its own: a streamed body cannot be sent again on a
        // fresh connection if a pooled one turns out closed.
        let slow = tokio::spawn({
            let req = reqwest::Client::new().post(format!("{}/v1/workspaces/{ws}/documents", api.base)).bearer_auth(&alice).multipart(form);
            async move {
                let resp = req.send().await.unwrap();
                (resp.status(), resp.json::<serde_json::Value>().await.unwrap_or_default())
            }
        });
        tx.send(Ok(b"The first half of a slow upload. ".to_vec())).await.unwrap();
        // A head start for the slow upload, longer after each lost race: on
        // a loaded machine its request took longer to reach the handler than
        // the first probe, ten times in a row.
        tokio::time::sleep(Duration::from_millis(200 * attempts)).await;
        match poll_status(&api, &ws, &alice, &slow).await {
            Some((s, v)) => break (tx, slow, s, v),
            None => {
                let (s, v) = slow.await.unwrap();
                assert_eq!((s, v["error"]["code"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("too_many_uploads")), "{v}");
                assert!(attempts < 10, "the slow upload lost the race for its slot {attempts} times");
            }
        }
    };
    assert_eq!((s, v["error"]["code"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("too_many_uploads")), "{v}");
    tx.send(Ok(b"And the rest.".to_vec())).await.unwrap();
    drop(tx);
    assert_eq!(slow.await.unwrap().0, StatusCode::ACCEPTED);

    run.stop().await;

    // Requests per second: the burst, then 429 until the bucket refills.
    let run = TestApp::spawn_stages(&t, StageName::Api, &[("API_RATE_PER_SEC", "1"), ("API_RATE_BURST", "10")]).await;
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let mut limited = None;
    for _ in 0..30 {
        let (s, _, headers) = api.call(reqwest::Method::GET, "/v1/workspaces", Some(&bob), None).await;
        if s == StatusCode::TOO_MANY_REQUESTS {
            limited = Some(retry_after(&headers));
            break;
        }
    }
    assert!(limited.is_some_and(|r| r >= 1), "the burst of 10 was exceeded within 30 requests");
    assert_eq!(api.call(reqwest::Method::GET, "/v1/workspaces", Some(&alice), None).await.0, StatusCode::OK, "alice has her own bucket");
    run.stop().await;
    t.cleanup().await;
}

/// An upload by Alice while her only upload slot is held: retried until
/// the first upload has reached the server. None when the slow upload
/// ended first: a probe took the slot before the slow upload reached the
/// handler, and it was refused.
async fn poll_status(
    api: &Api,
    ws: &str,
    token: &str,
    slow: &tokio::task::JoinHandle<(StatusCode, serde_json::Value)>,
) -> Option<(StatusCode, serde_json::Value)> {
    let start = Instant::now();
    loop {
        if slow.is_finished() {
            return None;
        }
        let (s, v) = api.upload(ws, token, "second.txt", "text/plain", b"second".to_vec()).await;
        if s == StatusCode::TOO_MANY_REQUESTS || start.elapsed() > Duration::from_secs(10) {
            // (A 202 meanwhile would mean the slot was not held: the assert says so.)
            return Some((s, v));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn tokio_stream_of(
    mut rx: tokio::sync::mpsc::Receiver<Result<Vec<u8>, std::io::Error>>,
) -> impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_sending_headers_slowly_is_cut_off_and_a_stream_ends_with_its_token() {
    let t = TestEnv::new().await;
    let run = TestApp::spawn_stages(&t, StageName::Api, &[("API_HEADER_TIMEOUT_SECS", "1")]).await;
    let api = Api::new(run.api_port);
    api.wait_ready().await;

    // Half a request line, then nothing: the server closes the connection.
    let mut conn = tokio::net::TcpStream::connect(("127.0.0.1", run.api_port)).await.unwrap();
    conn.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    let started = Instant::now();
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), conn.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "the connection was not closed");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(!String::from_utf8_lossy(&buf).contains("200 OK"), "{}", String::from_utf8_lossy(&buf));

    // A stream opened with a token that expires in 3 s ends then.
    let alice = token(&t, "alice").await;
    let (_, ws) = api.post("/v1/workspaces", &alice, json!({"name": "expiry"})).await;
    let ws = ws["id"].as_str().unwrap().to_string();
    let (_, conv) = api.post(&format!("/v1/workspaces/{ws}/conversations"), &alice, json!({})).await;
    let conv = conv["id"].as_str().unwrap().to_string();
    let short = jwt(&t.env["JWT_SECRET"], json!({"sub": "alice", "aud": "authenticated", "exp": now() + 3, "iat": now()}));
    let resp =
        api.http.get(format!("{}/v1/workspaces/{ws}/conversations/{conv}/events", api.base)).bearer_auth(&short).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.bytes_stream();
    let ended = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(chunk) = body.next().await {
            if chunk.is_err() {
                break;
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream outlived its token");
    run.stop().await;
    t.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workspace_holds_at_most_its_storage_quota() {
    let t = TestEnv::new().await;
    let run = TestApp::spawn_stages(&t, StageName::Api, &[("WORKSPACE_MAX_BYTES", "1000"), ("API_WORKSPACES_PER_USER", "2")]).await;
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let alice = token(&t, "alice").await;
    let (_, ws) = api.post("/v1/workspaces", &alice, json!({"name": "quota"})).await;
    let ws = ws["id"].as_str().unwrap().to_string();
    let (s, first) = api.upload(&ws, &alice, "a.txt", "text/plain", vec![b'a'; 600]).await;
    assert_eq!(s, StatusCode::ACCEPTED);
    let (s, v) = api.upload(&ws, &alice, "b.txt", "text/plain", vec![b'b'; 600]).await;
    assert_eq!((s, v["error"]["code"].as_str()), (StatusCode::PAYLOAD_TOO_LARGE, Some("storage_quota_exceeded")), "{v}");
    assert_eq!(api.upload(&ws, &alice, "c.txt", "text/plain", vec![b'c'; 300]).await.0, StatusCode::ACCEPTED, "what fits is taken");
    // Deleting frees the room.
    let id = first["document_id"].as_str().unwrap();
    let (s, _, _) = api.call(reqwest::Method::DELETE, &format!("/v1/workspaces/{ws}/documents/{id}"), Some(&alice), None).await;
    assert_eq!(s, StatusCode::ACCEPTED);
    assert_eq!(api.upload(&ws, &alice, "b.txt", "text/plain", vec![b'b'; 600]).await.0, StatusCode::ACCEPTED);
    // More workspaces are not more room without end.
    assert_eq!(api.post("/v1/workspaces", &alice, json!({"name": "second"})).await.0, StatusCode::CREATED);
    let (s, v) = api.post("/v1/workspaces", &alice, json!({"name": "third"})).await;
    assert_eq!((s, v["error"]["code"].as_str()), (StatusCode::CONFLICT, Some("too_many_workspaces")), "{v}");
    run.stop().await;
    t.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_list_is_paged_with_a_cursor() {
    let t = TestEnv::new().await;
    let run = TestApp::spawn_stages(&t, StageName::Api, &[]).await;
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let alice = token(&t, "alice").await;
    let mut made = Vec::new();
    for i in 0..5 {
        let (_, ws) = api.post("/v1/workspaces", &alice, json!({"name": format!("ws {i}")})).await;
        made.push(ws["id"].as_str().unwrap().to_string());
    }
    let ws = made[0].clone();
    for i in 0..5 {
        let (s, _) = api.upload(&ws, &alice, &format!("d{i}.txt"), "text/plain", format!("document {i}").into_bytes()).await;
        assert_eq!(s, StatusCode::ACCEPTED);
        api.post(&format!("/v1/workspaces/{ws}/conversations"), &alice, json!({"title": format!("c{i}")})).await;
    }
    for (path, key) in [
        ("/v1/workspaces".to_string(), "workspaces"),
        (format!("/v1/workspaces/{ws}/documents"), "documents"),
        (format!("/v1/workspaces/{ws}/conversations"), "conversations"),
    ] {
        let (mut seen, mut cursor, mut pages) = (Vec::new(), None::<String>, 0);
        loop {
            let url = match &cursor {
                Some(c) => format!("{path}?limit=2&cursor={c}"),
                None => format!("{path}?limit=2"),
            };
            let (s, page) = api.get(&url, &alice).await;
            assert_eq!(s, StatusCode::OK, "{url}: {page}");
            let items = page[key].as_array().unwrap();
            assert!(items.len() <= 2);
            seen.extend(items.iter().map(|i| i["id"].as_str().or(i["document_id"].as_str()).unwrap().to_string()));
            pages += 1;
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
        assert_eq!(pages, 3, "{path}: 5 items in pages of 2");
        let unique: std::collections::HashSet<&String> = seen.iter().collect();
        assert_eq!((seen.len(), unique.len()), (5, 5), "{path}: every item once: {seen:?}");
        let (s, v) = api.get(&format!("{path}?cursor=garbage"), &alice).await;
        assert_eq!((s, v["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_field")));
        let (s, _) = api.get(&format!("{path}?limit=0"), &alice).await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
    }
    run.stop().await;
    t.cleanup().await;
}
