//! API keys over real HTTP and the CLI, against the real stack: created
//! with a sign-in token (the secret shown once, only its hash stored),
//! usable wherever a JWT is, limited to one workspace when made so,
//! refused once revoked or expired, their last use recorded; and the
//! operator's `rag-engine keys` commands.

use crate::api_client::*;
use crate::app::TestApp;
use crate::common::*;
use rag_app::run::StageName;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sha2::Digest;

#[tokio::test]
async fn keys_are_shown_once_stored_hashed_scoped_and_revoked_at_once() {
    let t = TestEnv::new().await;
    let run = TestApp::spawn_stages(&t, StageName::Api, &[]).await;
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let (alice, bob) = (token(&t, "alice").await, token(&t, "bob").await);
    let (_, ws1) = api.post("/v1/workspaces", &alice, json!({"name": "one"})).await;
    let (_, ws2) = api.post("/v1/workspaces", &alice, json!({"name": "two"})).await;
    let (ws1, ws2) = (ws1["id"].as_str().unwrap().to_string(), ws2["id"].as_str().unwrap().to_string());
    let (_, bobs) = api.post("/v1/workspaces", &bob, json!({"name": "bob's"})).await;
    let bobs = bobs["id"].as_str().unwrap().to_string();

    // Created: the secret once; the list never shows it; the database
    // holds its SHA-256 and not the secret.
    let (s, all) = api.post("/v1/keys", &alice, json!({"name": "open-webui"})).await;
    assert_eq!(s, StatusCode::CREATED, "{all}");
    let all_secret = all["secret"].as_str().unwrap().to_string();
    assert!(all_secret.starts_with(all["prefix"].as_str().unwrap()), "{all}");
    assert_eq!(all["workspace_id"], Value::Null);
    let (s, one) = api.post("/v1/keys", &alice, json!({"name": "agent", "workspace_id": ws1, "expires_in_days": 30})).await;
    assert_eq!(s, StatusCode::CREATED, "{one}");
    let one_secret = one["secret"].as_str().unwrap().to_string();
    assert!(one["expires_at"].is_string());
    let (s, listed) = api.get("/v1/keys", &alice).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(listed["keys"].as_array().unwrap().len(), 2);
    assert!(!listed.to_string().contains(&all_secret[12..]), "a list never shows a secret: {listed}");
    let stored: Vec<(Vec<u8>,)> =
        rag_store::sqlx::query_as("SELECT secret_sha256 FROM api_keys ORDER BY created_at").fetch_all(&t.pool).await.unwrap();
    assert_eq!(stored[0].0, sha2::Sha256::digest(all_secret.as_bytes()).to_vec());
    let dump: Vec<(String,)> = rag_store::sqlx::query_as("SELECT row_to_json(k)::text FROM api_keys k").fetch_all(&t.pool).await.unwrap();
    assert!(dump.iter().all(|(row,)| !row.contains(&all_secret[17..]) && !row.contains(&one_secret[17..])), "{dump:?}");

    // Usable wherever a JWT is; the one-workspace key reaches that one.
    let (s, list) = api.get("/v1/workspaces", &all_secret).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(list["workspaces"].as_array().unwrap().len(), 2);
    let (s, list) = api.get("/v1/workspaces", &one_secret).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(list["workspaces"].as_array().unwrap().iter().map(|w| w["id"].as_str().unwrap()).collect::<Vec<_>>(), [ws1.as_str()]);
    assert_eq!(api.get(&format!("/v1/workspaces/{ws1}/documents"), &one_secret).await.0, StatusCode::OK);
    for (key, ws) in [(&one_secret, &ws2), (&one_secret, &bobs), (&all_secret, &bobs)] {
        let (s, body) = api.get(&format!("/v1/workspaces/{ws}/documents"), key).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{body}");
    }
    let (s, body) = api.post("/v1/workspaces", &one_secret, json!({"name": "more"})).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    // A key cannot manage keys.
    for (method, path) in [(Method::GET, "/v1/keys".to_string()), (Method::POST, "/v1/keys".into())] {
        let (s, body, _) = api.call(method, &path, Some(&all_secret), Some(json!({"name": "x"}))).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    }
    // Bad input changes nothing.
    for body in [
        json!({"name": ""}),
        json!({"name": "x", "expires_in_days": 0}),
        json!({"name": "x", "expires_in_days": 99999}),
        json!({"name": "x", "extra": 1}),
        json!({"name": "x", "workspace_id": bobs}),
    ] {
        let (s, answer) = api.post("/v1/keys", &alice, body.clone()).await;
        assert!(
            s == StatusCode::BAD_REQUEST || s == StatusCode::NOT_FOUND || s == StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {s} {answer}"
        );
    }
    assert_eq!(api.get("/v1/keys", &alice).await.1["keys"].as_array().unwrap().len(), 2);
    let last = if all_secret.ends_with('0') { '1' } else { '0' };
    let (s, _) = api.get("/v1/workspaces", &format!("{}{last}", &all_secret[..all_secret.len() - 1])).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "a wrong secret with a right lookup");
    let (s, _) = api.get("/v1/workspaces", "rag_nothing").await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);

    // The last use is recorded.
    let (_, listed) = api.get("/v1/keys", &alice).await;
    assert!(listed["keys"].as_array().unwrap().iter().all(|k| k["last_used_at"].is_string()), "{listed}");

    // Revoked: refused on the very next request; bob cannot revoke it.
    let id = all["id"].as_str().unwrap();
    let (s, _, _) = api.call(Method::DELETE, &format!("/v1/keys/{id}"), Some(&bob), None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(api.get("/v1/workspaces", &all_secret).await.0, StatusCode::OK);
    let (s, revoked, _) = api.call(Method::DELETE, &format!("/v1/keys/{id}"), Some(&alice), None).await;
    assert_eq!(s, StatusCode::OK);
    assert!(revoked["revoked_at"].is_string());
    let (s, body) = api.get("/v1/workspaces", &all_secret).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert!(body["error"]["message"].as_str().unwrap().contains("revoked"), "{body}");
    // Expired: refused.
    rag_store::sqlx::query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1")
        .bind(uuid::Uuid::parse_str(one["id"].as_str().unwrap()).unwrap())
        .execute(&t.pool)
        .await
        .unwrap();
    let (s, body) = api.get("/v1/workspaces", &one_secret).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert!(body["error"]["message"].as_str().unwrap().contains("expired"), "{body}");

    // The operator's commands.
    let (ok, out, err) = t.run(&["keys", "create", "--user", "alice", "--name", "cli", "--workspace", &ws2, "--json"]).await;
    assert!(ok, "{err}");
    let made: Value = serde_json::from_str(&out).unwrap();
    let secret = made["secret"].as_str().unwrap();
    let (s, list) = api.get("/v1/workspaces", secret).await;
    assert_eq!((s, list["workspaces"][0]["id"].as_str()), (StatusCode::OK, Some(ws2.as_str())));
    let (ok, out, _) = t.run(&["keys", "list", "--user", "alice", "--json"]).await;
    assert!(ok);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap().as_array().unwrap().len(), 3);
    let (ok, out, _) = t.run(&["keys", "list", "--user", "alice"]).await;
    assert!(ok && out.contains("cli") && out.contains("revoked"), "{out}");
    let (ok, _, err) = t.run(&["keys", "create", "--user", "alice", "--name", "x", "--workspace", &bobs]).await;
    assert!(!ok && err.contains("no workspace of user alice"), "{err}");
    let (ok, _, _) = t.run(&["keys", "revoke", made["key"]["id"].as_str().unwrap(), "--user", "alice"]).await;
    assert!(ok);
    assert_eq!(api.get("/v1/workspaces", secret).await.0, StatusCode::UNAUTHORIZED);
    t.cleanup().await;
}

/// The operator's `keys create` and `/v1/keys` make keys the same way: the
/// same expiry range, and neither gives a user more than
/// `MAX_LIVE_KEYS` live keys (the CLI once skipped that limit). Revoked and
/// expired keys do not count.
#[tokio::test]
async fn both_doors_hold_a_user_to_the_same_key_limits() {
    let t = TestEnv::new().await;
    let run = TestApp::spawn_stages(&t, StageName::Api, &[]).await;
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let carol = token(&t, "carol").await;
    let max = rag_api::keys::MAX_LIVE_KEYS;
    // carol already holds the most live keys, plus one revoked and one expired.
    rag_store::sqlx::query(
        "INSERT INTO api_keys (id, user_id, name, lookup, secret_sha256, revoked_at, expires_at)
         SELECT gen_random_uuid(), 'carol', 'k' || i, 'carol' || lpad(i::text, 7, '0'), sha256(('k' || i)::bytea),
                CASE WHEN i = $1 + 1 THEN now() END, CASE WHEN i = $1 + 2 THEN now() - interval '1 day' END
         FROM generate_series(1, $1 + 2) i",
    )
    .bind(max as i32)
    .execute(&t.pool)
    .await
    .unwrap();
    let pool = &t.pool;
    let live = || async move { rag_store::api_keys::count_live(pool, "carol").await.unwrap() };
    assert_eq!(live().await, max);

    let (ok, _, err) = t.run(&["keys", "create", "--user", "carol", "--name", "one more"]).await;
    assert!(!ok && err.contains(&format!("holds {max} live API keys")), "{err}");
    let (s, body) = api.post("/v1/keys", &carol, json!({"name": "one more"})).await;
    assert_eq!((s, body["error"]["code"].as_str()), (StatusCode::CONFLICT, Some("too_many_keys")), "{body}");
    assert_eq!(live().await, max);

    // Bad expiries are refused by both, with the same range.
    rag_store::sqlx::query("UPDATE api_keys SET revoked_at = now() WHERE user_id = 'carol' AND name = 'k1'")
        .execute(&t.pool)
        .await
        .unwrap();
    for days in ["0", "3651"] {
        let (ok, _, err) = t.run(&["keys", "create", "--user", "carol", "--name", "x", "--expires-in-days", days]).await;
        assert!(!ok && err.contains("expires_in_days must be 1-3650"), "{days}: {err}");
        let (s, body) = api.post("/v1/keys", &carol, json!({"name": "x", "expires_in_days": days.parse::<u32>().unwrap()})).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{days}: {body}");
    }
    // A name with a control character is refused by the CLI too.
    let (ok, _, err) = t.run(&["keys", "create", "--user", "carol", "--name", "bad\u{7}name"]).await;
    assert!(!ok && err.contains("control characters"), "{err}");
    // With one revoked, one more can be made, by either door, and no more.
    let (ok, _, err) = t.run(&["keys", "create", "--user", "carol", "--name", "the last", "--expires-in-days", "3650"]).await;
    assert!(ok, "{err}");
    assert_eq!(live().await, max);
    let (s, _) = api.post("/v1/keys", &carol, json!({"name": "past the limit"})).await;
    assert_eq!(s, StatusCode::CONFLICT);
    t.cleanup().await;
}

/// Small API rules: a `Last-Event-ID` no stream gave (malformed, or a time
/// outside what Postgres holds) is refused with 400 instead of a stream
/// whose every poll fails; every answer says `nosniff`.
#[tokio::test]
async fn event_ids_outside_the_streams_range_are_refused_and_nothing_is_sniffed() {
    let t = TestEnv::new().await;
    let run = TestApp::spawn_stages(&t, StageName::Api, &[]).await;
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let alice = token(&t, "alice").await;
    let (_, ws) = api.post("/v1/workspaces", &alice, json!({"name": "w"})).await;
    let ws = ws["id"].as_str().unwrap().to_string();
    let (_, c) = api.post(&format!("/v1/workspaces/{ws}/conversations"), &alice, json!({})).await;
    let c = c["id"].as_str().unwrap().to_string();
    let path = format!("{}/v1/workspaces/{ws}/conversations/{c}/events", api.base);
    for bad in [format!("-300000000000000000_{}", uuid::Uuid::now_v7()), "garbage".to_string()] {
        let resp = api.http.get(&path).bearer_auth(&alice).header("last-event-id", &bad).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], "invalid_last_event_id");
    }
    let (_, _, headers) = api.call(Method::GET, "/v1/workspaces", Some(&alice), None).await;
    assert_eq!(headers["x-content-type-options"], "nosniff");
    t.cleanup().await;
}
