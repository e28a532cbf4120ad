//! Workspaces by name everywhere, against the real stack: the operator's
//! `rag-engine workspaces create|list|rename|delete`; `upload`, `ask` and
//! `keys create` taking a name as well as an id; `/v1/models` listing
//! names as ids; a name two workspaces share refused with their ids; a
//! deleted workspace's documents deleted through the log and its key
//! revoked.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use crate::api_client::*;
use crate::app::TestApp;
use crate::common::*;

async fn run_json(t: &TestEnv, args: &[&str]) -> Value {
    let (ok, out, err) = t.run(args).await;
    assert!(ok, "{args:?} failed: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?} printed no JSON ({e}): {out}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workspace_is_reached_by_its_name_from_every_command() {
    let t = TestEnv::new().await;
    let all = TestApp::spawn(&t, &[]).await;
    let api = Api::new(all.api_port);
    api.wait_ready().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("noi-quy.txt");
    std::fs::write(&file, "Nhân viên được nghỉ phép 12 ngày mỗi năm.\n\nGiờ làm việc bắt đầu lúc 8 giờ sáng.\n").unwrap();
    let file = file.to_str().unwrap();

    let created = run_json(&t, &["workspaces", "create", "Sao Biển Xanh", "--user", "alice", "--json"]).await;
    let ws = created["id"].as_str().unwrap().to_string();
    assert_eq!(created["name"], "Sao Biển Xanh");

    // Upload and ask by name (case and spaces aside).
    let (ok, _, err) = t.run(&["upload", file, "--workspace", "Sao Biển Xanh"]).await;
    assert!(ok, "{err}");
    wait_until("the document to be ingested", Duration::from_secs(120), || async {
        t.documents().await.iter().any(|d| d.workspace_id == ws && d.status == rag_store::documents::DocumentStatus::Ingested)
    })
    .await;
    let answer =
        run_json(&t, &["ask", "Được nghỉ phép bao nhiêu ngày?", "--workspace", " sao biển xanh ", "--json", "--timeout", "60"]).await;
    assert!(answer["content"].as_str().unwrap().contains("12 ngày"), "{answer}");
    let listed = run_json(&t, &["workspaces", "list", "--user", "alice", "--json"]).await;
    assert_eq!(listed[0]["id"], ws.as_str());
    assert_eq!(listed[0]["documents"], 1);

    // A key by name; /v1/models lists the name as the model id.
    let key = run_json(&t, &["keys", "create", "--user", "alice", "--name", "chat", "--workspace", "Sao Biển Xanh", "--json"]).await;
    assert_eq!(key["key"]["workspace_id"], ws.as_str());
    let secret = key["secret"].as_str().unwrap().to_string();
    let (s, models) = api.get("/v1/models", &secret).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(models["data"][0]["id"], "Sao Biển Xanh", "{models}");
    assert_eq!(models["data"][0]["workspace_id"], ws.as_str());

    // Renamed; a second workspace of the same name makes the name ambiguous.
    let renamed = run_json(&t, &["workspaces", "rename", "Sao Biển Xanh", "Hải Đăng", "--user", "alice", "--json"]).await;
    assert_eq!((renamed["id"].as_str(), renamed["name"].as_str()), (Some(ws.as_str()), Some("Hải Đăng")));
    let twin = run_json(&t, &["workspaces", "create", "hải đăng", "--user", "alice", "--json"]).await;
    let twin = twin["id"].as_str().unwrap().to_string();
    let (ok, _, err) = t.run(&["upload", file, "--workspace", "Hải Đăng"]).await;
    assert!(!ok && err.contains("2 workspaces") && err.contains(&ws) && err.contains(&twin), "{err}");
    let (ok, _, err) = t.run(&["keys", "create", "--user", "bob", "--name", "x", "--workspace", "Hải Đăng"]).await;
    assert!(!ok && err.contains("no workspace of user bob"), "another user's name is not theirs: {err}");

    // Delete: refused while it holds documents; with them, through the log.
    let (ok, _, err) = t.run(&["workspaces", "delete", &ws, "--user", "alice"]).await;
    assert!(!ok && err.contains("holds 1 document"), "{err}");
    let deleted = run_json(&t, &["workspaces", "delete", &ws, "--user", "alice", "--with-documents", "--json"]).await;
    assert_eq!(deleted["documents_deleted"], 1);
    wait_until("the document to be deleted", Duration::from_secs(60), || async {
        t.documents().await.iter().filter(|d| d.workspace_id == ws).all(|d| d.status == rag_store::documents::DocumentStatus::Deleted)
    })
    .await;
    let (s, _) = api.get("/v1/models", &secret).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "a key for a deleted workspace is revoked");
    let listed = run_json(&t, &["workspaces", "list", "--user", "alice", "--json"]).await;
    assert_eq!(listed.as_array().unwrap().iter().map(|w| w["id"].as_str().unwrap()).collect::<Vec<_>>(), [twin.as_str()]);
    t.cleanup().await;
}
