//! A document that changes keeps its id: the new bytes are a new revision,
//! search switches to it once it is ingested (never seeing neither or
//! both), an earlier answer's citation still opens the text it quoted with
//! a line saying a newer revision exists, a re-chunking replay never brings
//! an old revision back, and a rebuild from the log gives identical rows.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::api_client::*;
use crate::app::TestApp;
use crate::common::*;
use rag_store::sqlx;

const FIRST: &str = "Nhân viên được nghỉ phép 12 ngày mỗi năm.\n\nGiờ làm việc bắt đầu lúc 8 giờ sáng.\n";
const SECOND: &str = "Theo quy chế mới, nhân viên được nghỉ phép 15 ngày mỗi năm.\n\nGiờ làm việc bắt đầu lúc 8 giờ 30 sáng.\n";
const THIRD: &str = "Theo quy chế mới nhất, nhân viên được nghỉ phép 18 ngày mỗi năm.\n\nGiờ làm việc bắt đầu lúc 9 giờ sáng.\n";

/// Every read model's rows as text, in a stable order.
async fn dump(t: &TestEnv) -> std::collections::BTreeMap<&'static str, Vec<String>> {
    let mut out = std::collections::BTreeMap::new();
    for table in ["documents", "document_revisions", "segments", "chunk_mappings", "search_chunks", "document_versions", "messages"] {
        let rows: Vec<String> = sqlx::query_scalar(&format!("SELECT x::text FROM {table} x ORDER BY 1")).fetch_all(&t.pool).await.unwrap();
        out.insert(table, rows);
    }
    out
}

async fn replace(api: &Api, ws: &str, token: &str, id: &str, body: &str) -> (StatusCode, Value) {
    let part = reqwest::multipart::Part::bytes(body.as_bytes().to_vec()).file_name("quy-che.txt").mime_str("text/plain").unwrap();
    let form = reqwest::multipart::Form::new().part("file", part);
    let resp =
        api.http.put(format!("{}/v1/workspaces/{ws}/documents/{id}", api.base)).bearer_auth(token).multipart(form).send().await.unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// The text search returns for `query` in the workspace (every hit's).
async fn searched(t: &TestEnv, ws: &str, query: &str) -> String {
    let (ok, out, err) = t.run(&["search", query, "--workspace", ws, "--json"]).await;
    assert!(ok, "{err}");
    let found: Value = serde_json::from_str(&out).unwrap();
    found["chunks"].as_array().unwrap().iter().map(|c| c["content"].as_str().unwrap_or_default().to_string()).collect()
}

/// Waits until the document's searchable revision is `revision`, ingested.
async fn searchable(api: &Api, ws: &str, token: &str, id: &str, revision: i64) -> Value {
    let path = format!("/v1/workspaces/{ws}/documents/{id}");
    let mut last = Value::Null;
    for _ in 0..1200 {
        let (_, d) = api.get(&path, token).await;
        if d["revision"] == revision && d["latest_revision"] == revision && d["status"] == "ingested" {
            return d;
        }
        last = d;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("revision {revision} never became searchable: {last}");
}

fn first_citation(answer: &Value) -> Value {
    answer["metadata"]["citations"].as_array().and_then(|c| c.first()).cloned().unwrap_or_else(|| panic!("no citation: {answer}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_document_is_a_new_revision_and_old_citations_keep_their_text() {
    let t = TestEnv::new().await;
    let run = TestApp::spawn(&t, &[]).await;
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let token = token(&t, "alice").await;
    let (s, ws) = api.post("/v1/workspaces", &token, json!({"name": "Quy chế"})).await;
    assert_eq!(s, StatusCode::CREATED, "{ws}");
    let ws = ws["id"].as_str().unwrap().to_string();

    // Revision 1, and an answer quoting it.
    let id = api.upload_accepted(&ws, &token, "quy-che.txt", "text/plain", FIRST.as_bytes().to_vec()).await;
    let d = searchable(&api, &ws, &token, &id, 1).await;
    assert_eq!(d["active_chunking_version"], "default@1", "the first revision keeps the keys stored before revisions: {d}");
    let old = api.ask_about(&ws, &token, "Nhân viên được nghỉ phép bao nhiêu ngày mỗi năm?", &id, Duration::from_secs(60)).await;
    let old_cite = first_citation(&old);
    assert_eq!(old_cite["revision"], 1, "{old_cite}");
    assert!(old_cite["text"].as_str().unwrap().contains("12 ngày"), "{old_cite}");

    // Revision 2 under the same id; identical bytes change nothing; an
    // unknown document cannot be replaced.
    let (s, v) = replace(&api, &ws, &token, &id, SECOND).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{v}");
    assert_eq!((v["document_id"].as_str(), v["revision"].as_i64()), (Some(id.as_str()), Some(2)), "{v}");
    let d = searchable(&api, &ws, &token, &id, 2).await;
    assert_eq!(d["active_chunking_version"], "default@1:r2", "{d}");
    let (s, v) = replace(&api, &ws, &token, &id, SECOND).await;
    assert_eq!((s, v["revision"].as_i64()), (StatusCode::OK, Some(2)), "the same bytes again: {v}");
    let (s, _) = replace(&api, &ws, &token, &uuid::Uuid::new_v4().to_string(), SECOND).await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // Search reads the new text only; a new answer cites revision 2.
    let found = searched(&t, &ws, "nghỉ phép bao nhiêu ngày").await;
    assert!(found.contains("15 ngày") && !found.contains("12 ngày"), "{found}");
    let new = api.ask_about(&ws, &token, "Nhân viên được nghỉ phép bao nhiêu ngày mỗi năm?", &id, Duration::from_secs(60)).await;
    let new_cite = first_citation(&new);
    assert_eq!(new_cite["revision"], 2, "{new_cite}");
    assert!(new_cite["text"].as_str().unwrap().contains("15 ngày"), "{new_cite}");

    // The earlier answer's citation still opens exactly the text it quoted,
    // saying that a newer revision is what search reads.
    let raw_path = format!("/v1/workspaces/{ws}/documents/{id}/raw-text");
    let (s, raw) = api.get(&format!("{raw_path}?revision=1"), &token).await;
    assert_eq!(s, StatusCode::OK, "{raw}");
    assert_eq!((raw["revision"].as_i64(), raw["newer_revision"].as_i64()), (Some(1), Some(2)), "{raw}");
    let text: Vec<char> =
        raw["segments"].as_array().unwrap().iter().flat_map(|s| s["text"].as_str().unwrap().chars().collect::<Vec<_>>()).collect();
    let (a, b) = (old_cite["char_start"].as_u64().unwrap() as usize, old_cite["char_end"].as_u64().unwrap() as usize);
    assert_eq!(text[a..b].iter().collect::<String>(), old_cite["text"].as_str().unwrap(), "the old citation's span, exactly");
    let (s, now) = api.get(&raw_path, &token).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(now["revision"], 2);
    assert!(now.get("newer_revision").is_none(), "{now}");
    assert!(now["segments"][0]["text"].as_str().unwrap().contains("15 ngày"), "{now}");
    for (query, status) in [("?revision=3", StatusCode::NOT_FOUND), ("?revision=0", StatusCode::NOT_FOUND)] {
        let (s, v, _) = api.call(Method::GET, &format!("{raw_path}{query}"), Some(&token), None).await;
        assert_eq!(s, status, "{query}: {v}");
    }

    // Revision 3 from the CLI, then a re-chunking replay of the document:
    // every revision's parse is chunked again, and search stays on the
    // newest.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("quy-che.txt");
    std::fs::write(&file, THIRD).unwrap();
    let (ok, out, err) = t.run(&["upload", file.to_str().unwrap(), "--workspace", &ws, "--replace", &id, "--json"]).await;
    assert!(ok, "{out}{err}");
    let printed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((printed[0]["document_id"].as_str(), printed[0]["revision"].as_i64()), (Some(id.as_str()), Some(3)), "{printed}");
    searchable(&api, &ws, &token, &id, 3).await;
    let (ok, out, err) = t.run(&["replay", "chunking", "--profile", "fine@1", "--document", &id, "--json", "--timeout", "120"]).await;
    assert!(ok, "{out}{err}");
    let summary: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["documents_on_new_version"], 1, "{summary}");
    let d = searchable(&api, &ws, &token, &id, 3).await;
    assert_eq!(d["active_chunking_version"], "fine@1:r3", "{d}");
    let found = searched(&t, &ws, "nghỉ phép bao nhiêu ngày").await;
    assert!(found.contains("18 ngày") && !found.contains("15 ngày") && !found.contains("12 ngày"), "{found}");

    // The earlier answers' citations survive a rebuild from the log, and
    // every row is what it was.
    run.stop().await;
    let before = dump(&t).await;
    assert_eq!(before["document_revisions"].len(), 3, "{:?}", before["document_revisions"]);
    let (ok, out, err) = t.run(&["rebuild", "read-models", "--yes", "--json"]).await;
    assert!(ok, "{out}\n{err}");
    let after = dump(&t).await;
    for (table, rows) in &before {
        assert_eq!(rows, &after[table], "the rebuilt {table} is identical");
    }

    // Retention (REVISION_RETENTION=cited): a superseded revision no answer
    // cites loses its text; the cited ones keep theirs.
    let run = TestApp::spawn(&t, &[]).await;
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let other = api.upload_accepted(&ws, &token, "noi-quy.txt", "text/plain", FIRST.as_bytes().to_vec()).await;
    searchable(&api, &ws, &token, &other, 1).await;
    let (s, _) = replace(&api, &ws, &token, &other, SECOND).await;
    assert_eq!(s, StatusCode::ACCEPTED);
    searchable(&api, &ws, &token, &other, 2).await;
    let dropped = rag_store::revisions::prune_uncited(&t.pool, Duration::ZERO).await.unwrap();
    assert!(dropped > 0, "the uncited revision's segments go");
    let (s, v) = api.get(&format!("/v1/workspaces/{ws}/documents/{other}/raw-text?revision=1"), &token).await;
    assert_eq!((s, v["error"]["code"].as_str()), (StatusCode::GONE, Some("revision_removed")), "{v}");
    let (s, raw) = api.get(&format!("{raw_path}?revision=1"), &token).await;
    assert_eq!(s, StatusCode::OK, "the revision an answer cites keeps its text: {raw}");
    assert_eq!(rag_store::revisions::prune_uncited(&t.pool, Duration::ZERO).await.unwrap(), 0, "idempotent");
    run.stop().await;
    t.cleanup().await;
}
