//! The typed client of the HTTP API the tests use: JSON calls, multipart
//! uploads, the readiness wait, and Server-Sent Events as typed values.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::common::{wait_until, TestEnv};

pub struct Api {
    pub base: String,
    pub http: reqwest::Client,
}

impl Api {
    pub fn new(port: u16) -> Api {
        Api { base: format!("http://127.0.0.1:{port}"), http: reqwest::Client::new() }
    }

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value, reqwest::header::HeaderMap) {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let (status, headers) = (resp.status(), resp.headers().clone());
        let text = resp.text().await.unwrap();
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value, headers)
    }

    pub async fn get(&self, path: &str, token: &str) -> (StatusCode, Value) {
        let (s, v, _) = self.call(Method::GET, path, Some(token), None).await;
        (s, v)
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> (StatusCode, Value) {
        let (s, v, _) = self.call(Method::POST, path, Some(token), Some(body)).await;
        (s, v)
    }

    pub async fn upload(&self, ws: &str, token: &str, filename: &str, content_type: &str, bytes: Vec<u8>) -> (StatusCode, Value) {
        let send = || {
            let part = reqwest::multipart::Part::bytes(bytes.clone()).file_name(filename.to_string()).mime_str(content_type).unwrap();
            let form = reqwest::multipart::Form::new().part("file", part);
            self.http.post(format!("{}/v1/workspaces/{ws}/documents", self.base)).bearer_auth(token).multipart(form)
        };
        let resp = if bytes.len() > 64 * 1024 { send_refusable(send, filename).await } else { send().send().await.unwrap() };
        let status = resp.status();
        let text = resp.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    /// Uploads and expects 202; returns the document id.
    pub async fn upload_accepted(&self, ws: &str, token: &str, name: &str, content_type: &str, bytes: Vec<u8>) -> String {
        let (s, v) = self.upload(ws, token, name, content_type, bytes).await;
        assert_eq!(s, StatusCode::ACCEPTED, "{name}: {v}");
        v["document_id"].as_str().unwrap().to_string()
    }

    /// Waits up to `wait` until the document is `ingested` or `failed`;
    /// returns its row.
    pub async fn settled(&self, ws: &str, token: &str, id: &str, wait: Duration) -> Value {
        let path = format!("/v1/workspaces/{ws}/documents/{id}");
        let started = std::time::Instant::now();
        loop {
            let (_, d) = self.get(&path, token).await;
            if matches!(d["status"].as_str(), Some("ingested" | "failed")) {
                return d;
            }
            assert!(started.elapsed() < wait, "document {id} neither ingested nor failed: {d}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Asks in a new conversation about one document and waits up to
    /// `wait` for the answer, which must be `done`.
    pub async fn ask_about(&self, ws: &str, token: &str, question: &str, document: &str, wait: Duration) -> Value {
        let (s, conv) = self.post(&format!("/v1/workspaces/{ws}/conversations"), token, serde_json::json!({})).await;
        assert_eq!(s, StatusCode::CREATED, "{conv}");
        let conv = conv["id"].as_str().unwrap().to_string();
        let body = serde_json::json!({"content": question, "document_ids": [document]});
        let (s, posted) = self.post(&format!("/v1/workspaces/{ws}/conversations/{conv}/messages"), token, body).await;
        assert_eq!(s, StatusCode::ACCEPTED, "{posted}");
        let assistant = posted["assistant_message"]["id"].as_str().unwrap().to_string();
        let path = format!("/v1/workspaces/{ws}/conversations/{conv}/messages/{assistant}");
        let started = std::time::Instant::now();
        loop {
            let (_, m) = self.get(&path, token).await;
            if m["status"] != "pending" {
                assert_eq!(m["status"], "done", "{m}");
                return m;
            }
            assert!(started.elapsed() < wait, "no answer to {question:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn wait_ready(&self) {
        wait_until("the API to be ready", Duration::from_secs(60), || async {
            matches!(self.http.get(format!("{}/readyz", self.base)).send().await, Ok(r) if r.status() == StatusCode::OK)
        })
        .await;
    }
}

pub async fn token(t: &TestEnv, user: &str) -> String {
    let (ok, out, err) = t.run(&["token", "--user", user, "--ttl", "10m"]).await;
    assert!(ok, "{err}");
    out.trim().to_string()
}

pub fn jwt(secret: &str, claims: Value) -> String {
    rag_api::auth::install_jwt_crypto();
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .unwrap()
}

pub fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// One parsed Server-Sent Event.
#[derive(Debug, Clone)]
pub struct Sse {
    pub event: String,
    pub id: String,
    pub data: Value,
}

/// Opens the conversation's event stream and forwards its events.
pub async fn open_events(api: &Api, path: &str, token: &str, last_event_id: Option<&str>) -> tokio::sync::mpsc::UnboundedReceiver<Sse> {
    let mut req = api.http.get(format!("{}{path}", api.base)).bearer_auth(token);
    if let Some(id) = last_event_id {
        req = req.header("Last-Event-ID", id);
    }
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut stream = resp.bytes_stream();
        let mut buf = String::new();
        while let Some(Ok(chunk)) = stream.next().await {
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let block: String = buf.drain(..end + 2).collect();
                let mut e = Sse { event: String::new(), id: String::new(), data: Value::Null };
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        e.event = v.trim().to_string();
                    } else if let Some(v) = line.strip_prefix("id:") {
                        e.id = v.trim().to_string();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        e.data = serde_json::from_str(v.trim()).unwrap();
                    }
                }
                if !e.event.is_empty() && tx.send(e).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

pub async fn next_event(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Sse>, timeout: Duration) -> Sse {
    tokio::time::timeout(timeout, rx.recv()).await.expect("an event within the timeout").expect("the stream is open")
}

/// Alice's workspace "Báo cáo" holding `report` (bao-cao.txt) ingested, and
/// Bob's workspace beside it: what the tools' tests (OpenAI-compatible
/// chat, MCP) ask against.
pub struct ReportWorkspace {
    pub alice: String,
    pub ws: String,
    pub doc: String,
    pub other: String,
}

pub async fn report_workspace(t: &TestEnv, api: &Api, report: &str) -> ReportWorkspace {
    let alice = token(t, "alice").await;
    let (_, ws) = api.post("/v1/workspaces", &alice, serde_json::json!({"name": "Báo cáo"})).await;
    let ws = ws["id"].as_str().unwrap().to_string();
    let (_, other) = api.post("/v1/workspaces", &token(t, "bob").await, serde_json::json!({"name": "Bob"})).await;
    let other = other["id"].as_str().unwrap().to_string();
    let doc = api.upload_accepted(&ws, &alice, "bao-cao.txt", "text/plain", report.as_bytes().to_vec()).await;
    wait_until("ingested", Duration::from_secs(120), || async { t.ingested_count().await == 1 }).await;
    ReportWorkspace { alice, ws, doc, other }
}

/// Sends a request whose large body the server may refuse unread. The
/// server answers 413 from the declared length and closes the connection;
/// a client still sending can then lose the answer (hyper:
/// IncompleteMessage, or a reset under load). Such a send is repeated, as a
/// real client would; any other error, or a fourth loss, fails.
pub async fn send_refusable(request: impl Fn() -> reqwest::RequestBuilder, what: &str) -> reqwest::Response {
    let mut attempts = 0;
    loop {
        match request().send().await {
            Ok(r) => return r,
            Err(e) if e.is_request() && attempts < 3 => attempts += 1,
            Err(e) => panic!("{what}: {e:?}"),
        }
    }
}
