//! The soak's clients: every door of the running service, as its users
//! call it (the page's API with its event streams, the OpenAI-compatible
//! chat streamed and not, MCP `ask` and `search`, uploads, deletions, API
//! keys), each request timed and its status kept. A few clients misbehave
//! on purpose: one drops its event stream mid-answer, one reads slowly.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::super::corpus::Expect;
use super::report::RequestRecord;

/// How a page client reads its conversation's event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// To the answer's final event.
    Whole,
    /// Drops the stream after its first event, then polls the message.
    Disconnects,
    /// Reads a piece of the stream every two seconds.
    Slowly,
}

/// What the clients did, for the checks at the end.
#[derive(Default)]
pub struct Ledger {
    pub records: Vec<RequestRecord>,
    /// Documents the API accepted (202), with what they must end as.
    pub accepted: Vec<(String, Expect)>,
    /// Assistant message ids of questions the doors accepted.
    pub questions: Vec<String>,
}

pub struct Doors {
    pub http: reqwest::Client,
    pub base: String,
    pub token: String,
    pub workspace: String,
    /// The current API key: (id, secret).
    pub key: Mutex<(String, String)>,
    pub started: Instant,
    pub ledger: Mutex<Ledger>,
}

const ANSWER_WAIT: Duration = Duration::from_secs(180);

impl Doors {
    fn record(&self, door: &str, at: Instant, status: u16) {
        let r = RequestRecord {
            door: door.to_string(),
            at: at.duration_since(self.started).as_secs_f64(),
            secs: at.elapsed().as_secs_f64(),
            status,
        };
        if let Ok(mut l) = self.ledger.lock() {
            l.records.push(r);
        }
    }

    fn secret(&self) -> String {
        self.key.lock().map(|k| k.1.clone()).unwrap_or_default()
    }

    fn ws_path(&self, rest: &str) -> String {
        format!("{}/v1/workspaces/{}{rest}", self.base, self.workspace)
    }

    /// A JSON call with the user's token; (status, body), status 0 when no
    /// answer came.
    async fn call(&self, method: reqwest::Method, url: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self.http.request(method, url).bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        match req.send().await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                (status, resp.json().await.unwrap_or(Value::Null))
            }
            Err(_) => (0, Value::Null),
        }
    }

    /// Uploads one file; an accepted one is in the ledger with what it
    /// must end as. Returns its document id.
    pub async fn upload(&self, name: &str, bytes: Vec<u8>, expect: Expect) -> Option<String> {
        let at = Instant::now();
        let part = reqwest::multipart::Part::bytes(bytes).file_name(name.to_string());
        let form = reqwest::multipart::Form::new().part("file", part);
        let resp = self.http.post(self.ws_path("/documents")).bearer_auth(&self.token).multipart(form).send().await;
        let (status, body) = match resp {
            Ok(r) => (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null)),
            Err(_) => (0, Value::Null),
        };
        self.record("upload", at, status);
        let id = body["document_id"].as_str().filter(|_| status == 202)?.to_string();
        if let Ok(mut l) = self.ledger.lock() {
            l.accepted.push((id.clone(), expect));
        }
        Some(id)
    }

    /// Deletes a document; true when the API took the deletion. A delete
    /// that got no definitive answer (a restart under way) is asked again:
    /// deleting is idempotent, and the ledger must know which it is.
    pub async fn delete(&self, id: &str) -> bool {
        let mut status = 0;
        for attempt in 0..10 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_secs(3)).await;
            }
            let at = Instant::now();
            status = self.call(reqwest::Method::DELETE, &self.ws_path(&format!("/documents/{id}")), None).await.0;
            self.record("delete", at, status);
            if status != 0 && status < 500 {
                break;
            }
        }
        // 404: an earlier attempt went through.
        let deleted = (200..300).contains(&status) || status == 404;
        if deleted {
            if let Ok(mut l) = self.ledger.lock() {
                for (doc, expect) in l.accepted.iter_mut() {
                    if doc == id {
                        *expect = Expect::Deleted;
                    }
                }
            }
        }
        deleted
    }

    /// A question on the page's API: the conversation's event stream is
    /// opened first, the question posted, and the answer read from the
    /// stream (as `reading` says). Timed from the post to the final event.
    /// Returns the conversation, for a follow-up.
    pub async fn page_question(&self, question: &str, conversation: Option<String>, reading: Reading) -> Option<String> {
        // The misbehaving clients are doors of their own: their latencies
        // are not the well-behaved clients'.
        let door = match (reading, conversation.is_some()) {
            (Reading::Disconnects, _) => "page_hangs_up",
            (Reading::Slowly, _) => "page_slow_reader",
            (Reading::Whole, true) => "page_followup",
            (Reading::Whole, false) => "page",
        };
        let conversation = match conversation {
            Some(c) => c,
            None => {
                let at = Instant::now();
                let (status, body) =
                    self.call(reqwest::Method::POST, &self.ws_path("/conversations"), Some(json!({"title": "soak"}))).await;
                if status != 201 {
                    self.record(door, at, status);
                    return None;
                }
                body["id"].as_str()?.to_string()
            }
        };
        let events = self.http.get(self.ws_path(&format!("/conversations/{conversation}/events"))).bearer_auth(&self.token).send().await;
        let events = match events {
            Ok(r) if r.status() == StatusCode::OK => Some(r),
            Ok(r) => {
                self.record(door, Instant::now(), r.status().as_u16());
                return None;
            }
            Err(_) => None,
        };
        let at = Instant::now();
        let posted = self
            .call(
                reqwest::Method::POST,
                &self.ws_path(&format!("/conversations/{conversation}/messages")),
                Some(json!({"content": question})),
            )
            .await;
        let Some(assistant) = posted.1["assistant_message"]["id"].as_str().filter(|_| posted.0 == 202).map(str::to_string) else {
            self.record(door, at, posted.0);
            return None;
        };
        if let Ok(mut l) = self.ledger.lock() {
            l.questions.push(assistant.clone());
        }
        let outcome = match (events, reading) {
            (Some(stream), Reading::Whole | Reading::Slowly) => {
                let slow = reading == Reading::Slowly;
                tokio::time::timeout(ANSWER_WAIT, final_event(stream, &assistant, slow)).await.unwrap_or(None)
            }
            (Some(stream), Reading::Disconnects) => {
                // The first piece of the stream, then hang up.
                let mut bytes = stream.bytes_stream();
                let _ = tokio::time::timeout(Duration::from_secs(5), bytes.next()).await;
                drop(bytes);
                self.poll_answer(&conversation, &assistant).await
            }
            (None, _) => self.poll_answer(&conversation, &assistant).await,
        };
        self.record(door, at, answer_status(outcome.as_deref()));
        Some(conversation)
    }

    /// The message's final status, polled every 100 ms: a door's time is
    /// measured to a tenth of a second (at 500 ms the hang-up door's p99
    /// moved in half-second steps).
    async fn poll_answer(&self, conversation: &str, assistant: &str) -> Option<String> {
        let url = self.ws_path(&format!("/conversations/{conversation}/messages/{assistant}"));
        let started = Instant::now();
        while started.elapsed() < ANSWER_WAIT {
            let (status, m) = self.call(reqwest::Method::GET, &url, None).await;
            if status == 200 && m["status"] != "pending" {
                return m["status"].as_str().map(str::to_string);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        None
    }

    /// `/v1/chat/completions` with the API key, streamed or not.
    pub async fn chat(&self, question: &str, stream: bool) {
        let door = if stream { "chat_stream" } else { "chat" };
        let at = Instant::now();
        let body = json!({"model": self.workspace, "stream": stream, "messages": [{"role": "user", "content": question}]});
        let resp = self.http.post(format!("{}/v1/chat/completions", self.base)).bearer_auth(self.secret()).json(&body).send().await;
        let resp = match resp {
            Ok(r) => r,
            Err(_) => return self.record(door, at, 0),
        };
        let status = resp.status().as_u16();
        if status != 200 {
            return self.record(door, at, status);
        }
        // The answer's id is `chatcmpl-` and its message's id, unhyphenated.
        let id = if stream {
            let mut id = None;
            let mut done = false;
            let mut failed = false;
            let mut bytes = resp.bytes_stream();
            let mut buf = String::new();
            while let Ok(Some(Ok(chunk))) = tokio::time::timeout(ANSWER_WAIT, bytes.next()).await {
                buf.push_str(&String::from_utf8_lossy(&chunk));
                for line in buf.lines().filter_map(|l| l.strip_prefix("data: ")) {
                    if line.trim() == "[DONE]" {
                        done = true;
                    } else if let Ok(v) = serde_json::from_str::<Value>(line) {
                        // A failed answer comes as an error object in the stream.
                        failed |= v.get("error").is_some();
                        if id.is_none() {
                            id = v["id"].as_str().map(str::to_string);
                        }
                    }
                }
                if let Some(end) = buf.rfind('\n') {
                    buf.drain(..=end);
                }
                if done {
                    break;
                }
            }
            if !done || failed {
                return self.record(door, at, if failed { 502 } else { 0 });
            }
            id
        } else {
            resp.json::<Value>().await.ok().and_then(|v| v["id"].as_str().map(str::to_string))
        };
        if let Some(message) = id.as_deref().and_then(|i| i.strip_prefix("chatcmpl-")).and_then(|s| uuid::Uuid::parse_str(s).ok()) {
            if let Ok(mut l) = self.ledger.lock() {
                l.questions.push(message.to_string());
            }
        }
        self.record(door, at, 200);
    }

    /// One MCP tool call with the API key (JSON-RPC over Streamable HTTP).
    pub async fn mcp(&self, tool: &str, arguments: Value) {
        let door = format!("mcp_{tool}");
        let at = Instant::now();
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
        let resp = self
            .http
            .post(format!("{}/mcp", self.base))
            .bearer_auth(self.secret())
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .json(&body)
            .send()
            .await;
        let Ok(resp) = resp else { return self.record(&door, at, 0) };
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        let v: Value = serde_json::from_str(&text)
            .or_else(|_| serde_json::from_str(text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or("null")))
            .unwrap_or(Value::Null);
        // A tool's failure is a 200 with isError: a failed call here.
        let failed = v.get("error").is_some() || v["result"]["isError"] == true;
        if let Some(message) = v["result"]["structuredContent"]["rag"]["message_id"].as_str() {
            if let Ok(mut l) = self.ledger.lock() {
                l.questions.push(message.to_string());
            }
        }
        self.record(&door, at, if status == 200 && failed { 502 } else { status });
    }

    /// Creates a new API key and revokes the one before: clients holding
    /// the old one are refused from then on.
    pub async fn rotate_key(&self) -> bool {
        let at = Instant::now();
        let (status, created) = self
            .call(reqwest::Method::POST, &format!("{}/v1/keys", self.base), Some(json!({"name": "soak", "workspace_id": self.workspace})))
            .await;
        self.record("keys", at, status);
        let (Some(id), Some(secret)) = (created["id"].as_str(), created["secret"].as_str()) else { return false };
        let old = match self.key.lock() {
            Ok(mut k) => std::mem::replace(&mut *k, (id.to_string(), secret.to_string())),
            Err(_) => return false,
        };
        if old.0.is_empty() {
            return true;
        }
        let at = Instant::now();
        let (status, _) = self.call(reqwest::Method::DELETE, &format!("{}/v1/keys/{}", self.base, old.0), None).await;
        self.record("keys", at, status);
        if !(200..300).contains(&status) {
            return false;
        }
        // The revoked key is refused from now on (recorded as the door
        // `revoked_key`: 401 is its right answer, anything else a failure).
        let at = Instant::now();
        let refused =
            self.http.get(format!("{}/v1/models", self.base)).bearer_auth(&old.1).send().await.map(|r| r.status().as_u16()).unwrap_or(0);
        self.record("revoked_key", at, if refused == 401 { 200 } else { 500 });
        refused == 401
    }
}

/// A page question's recorded status: 200 answered, 502 its answer failed,
/// 0 no final status within the wait.
fn answer_status(outcome: Option<&str>) -> u16 {
    match outcome {
        Some("done") => 200,
        Some(_) => 502,
        None => 0,
    }
}

/// Reads a conversation's event stream until the message's final
/// `message.status_updated`; its status, when it came.
async fn final_event(resp: reqwest::Response, assistant: &str, slowly: bool) -> Option<String> {
    let mut bytes = resp.bytes_stream();
    let mut buf = String::new();
    while let Some(Ok(chunk)) = bytes.next().await {
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let data = block.lines().find_map(|l| l.strip_prefix("data:")).map(str::trim).unwrap_or_default();
            let is_update = block.lines().any(|l| l.strip_prefix("event:").map(str::trim) == Some("message.status_updated"));
            if let (true, Ok(v)) = (is_update, serde_json::from_str::<Value>(data)) {
                if v["id"] == assistant && v["status"] != "pending" {
                    return v["status"].as_str().map(str::to_string);
                }
            }
        }
        if slowly {
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }
    None
}
