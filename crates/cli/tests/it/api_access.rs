//! The HTTP API's access rules over real HTTP against the real stack:
//! tokens, ownership, filenames, sizes, types, CORS, and the page served
//! embedded with the development sign-in off by default.

use crate::api_client::*;
use crate::app::TestApp;
use crate::common::*;
use rag_app::run::StageName;
use reqwest::{Method, StatusCode};
use serde_json::json;

#[tokio::test]
async fn tokens_ownership_filenames_sizes_and_types_are_enforced() {
    let t = TestEnv::new().await.with_env(&[("UPLOAD_MAX_BYTES", "65536"), ("CORS_ALLOWED_ORIGINS", "https://app.example")]);
    // The API alone: nothing parses, so an upload stays `uploaded`.
    let run = TestApp::spawn_stages(&t, StageName::Api, &[]).await;
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let secret = t.env["JWT_SECRET"].clone();
    let (alice, bob) = (token(&t, "alice").await, token(&t, "bob").await);

    // Tokens.
    let (s, body, headers) = api.call(Method::GET, "/v1/workspaces", None, None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"]["code"], "unauthorized");
    assert!(headers.contains_key("x-request-id"), "every response carries a request id");
    let bad = [
        ("expired", jwt(&secret, json!({"sub": "alice", "aud": "authenticated", "exp": now() - 3600}))),
        (
            "wrong signature",
            jwt("another-secret-that-is-long-enough-000", json!({"sub": "alice", "aud": "authenticated", "exp": now() + 600})),
        ),
        ("wrong audience", jwt(&secret, json!({"sub": "alice", "aud": "someone-else", "exp": now() + 600}))),
        ("no subject", jwt(&secret, json!({"aud": "authenticated", "exp": now() + 600}))),
        ("no audience", jwt(&secret, json!({"sub": "alice", "exp": now() + 600}))),
        ("not valid yet", jwt(&secret, json!({"sub": "alice", "aud": "authenticated", "exp": now() + 900, "nbf": now() + 600}))),
        ("a century long", jwt(&secret, json!({"sub": "alice", "aud": "authenticated", "exp": now() + 3_153_600_000u64, "iat": now()}))),
        ("garbage", "not-a-jwt".to_string()),
    ];
    for (why, tok) in &bad {
        let (s, body) = api.get("/v1/workspaces", tok).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{why}: {body}");
        assert_eq!(body["error"]["code"], "unauthorized", "{why}");
    }
    // A Supabase-style token signed with the secret is accepted.
    let supabase = jwt(&secret, json!({"sub": "carol", "aud": "authenticated", "role": "authenticated", "exp": now() + 600, "iat": now()}));
    assert_eq!(api.get("/v1/workspaces", &supabase).await.0, StatusCode::OK);

    // Alice's workspace, document, conversation and message.
    let (_, ws) = api.post("/v1/workspaces", &alice, json!({"name": "alice's"})).await;
    let ws = ws["id"].as_str().unwrap().to_string();
    let (s, up) = api.upload(&ws, &alice, "onboarding.txt", "text/plain", b"Welcome aboard. Badges are at the front desk.".to_vec()).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{up}");
    let doc = up["document_id"].as_str().unwrap().to_string();
    let (s, d) = api.get(&format!("/v1/workspaces/{ws}/documents/{doc}"), &alice).await;
    assert_eq!((s, d["status"].as_str()), (StatusCode::OK, Some("uploaded")), "read your write: {d}");
    let (s, raw) = api.get(&format!("/v1/workspaces/{ws}/documents/{doc}/raw-text"), &alice).await;
    assert_eq!(s, StatusCode::CONFLICT, "not parsed yet: {raw}");
    assert_eq!(raw["error"]["code"], "not_parsed");
    let (_, conv) = api.post(&format!("/v1/workspaces/{ws}/conversations"), &alice, json!({})).await;
    let conv = conv["id"].as_str().unwrap().to_string();
    let (s, posted) =
        api.post(&format!("/v1/workspaces/{ws}/conversations/{conv}/messages"), &alice, json!({"content": "Where are badges?"})).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{posted}");
    let msg = posted["assistant_message"]["id"].as_str().unwrap().to_string();
    assert_eq!(api.get(&format!("/v1/workspaces/{ws}/conversations/{conv}/messages/{msg}"), &alice).await.0, StatusCode::OK);

    // Bob sees none of it, whether through Alice's workspace or his own.
    let (_, bws) = api.post("/v1/workspaces", &bob, json!({"name": "bob's"})).await;
    let bws = bws["id"].as_str().unwrap().to_string();
    let (_, bob_list) = api.get("/v1/workspaces", &bob).await;
    assert_eq!(bob_list["workspaces"].as_array().unwrap().len(), 1);
    for w in [&ws, &bws] {
        for (method, path, body) in [
            (Method::GET, format!("/v1/workspaces/{w}/documents"), None),
            (Method::GET, format!("/v1/workspaces/{w}/documents/{doc}"), None),
            (Method::GET, format!("/v1/workspaces/{w}/documents/{doc}/raw-text"), None),
            (Method::DELETE, format!("/v1/workspaces/{w}/documents/{doc}"), None),
            (Method::GET, format!("/v1/workspaces/{w}/conversations"), None),
            (Method::GET, format!("/v1/workspaces/{w}/conversations/{conv}"), None),
            (Method::GET, format!("/v1/workspaces/{w}/conversations/{conv}/messages/{msg}"), None),
            (Method::GET, format!("/v1/workspaces/{w}/conversations/{conv}/events"), None),
            (Method::POST, format!("/v1/workspaces/{w}/conversations/{conv}/messages"), Some(json!({"content": "hi"}))),
        ] {
            if w == &bws && (path.ends_with("/documents") || path.ends_with("/conversations")) {
                continue; // his own, empty listings
            }
            let (s, body, _) = api.call(method.clone(), &path, Some(&bob), body).await;
            assert_eq!(s, StatusCode::NOT_FOUND, "bob {method} {path}: {body}");
            assert_eq!(body["error"]["code"], "not_found");
        }
    }
    let (s, v) = api.upload(&ws, &bob, "x.txt", "text/plain", b"bob was here".to_vec()).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
    // Alice's document is untouched by Bob's attempts.
    assert_eq!(api.get(&format!("/v1/workspaces/{ws}/documents/{doc}"), &alice).await.0, StatusCode::OK);

    // A type is stored in its one canonical spelling.
    let (s, v) = api.upload(&ws, &alice, "page.html", "Text/HTML; charset=UTF-8; x=y", b"<p>Hi</p>".to_vec()).await;
    assert_eq!((s, v["content_type"].as_str()), (StatusCode::ACCEPTED, Some("text/html")), "{v}");

    // Filenames, sizes, types.
    let before = t.document_count().await;
    for name in ["../../etc/passwd", "..\\..\\boot.ini", "a/b.txt", "invoice\u{202E}fdp.exe", "zero\u{200B}width.txt"] {
        let (s, v) = api.upload(&ws, &alice, name, "text/plain", b"hello".to_vec()).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{name}: {v}");
        assert_eq!(v["error"]["code"], "invalid_filename");
    }
    let (s, v) = api.upload(&ws, &alice, "big.txt", "text/plain", vec![b'a'; 200 * 1024]).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
    assert_eq!(v["error"]["code"], "payload_too_large");
    let (s, v) = api.upload(&ws, &alice, "setup.exe", "application/x-msdownload", b"MZ\x90\x00".to_vec()).await;
    assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{v}");
    assert_eq!(v["error"]["code"], "unsupported_media_type");
    // The refusal names every format accepted, presentations and images too.
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.ends_with(&rag_docparse::Format::all_names()), "{message}");
    assert!(["PDF", "PPTX", "ODP", "XLSX", "PNG", "or WebP"].iter().all(|f| message.contains(f)), "{message}");
    // Judged by the bytes and the name as well as the declared type.
    for (name, ct, bytes) in [
        ("setup.txt", "text/plain", b"MZ\x90\x00\x03".to_vec()),
        ("setup.exe", "text/plain", b"hello".to_vec()),
        ("app.js", "text/plain", b"alert(1)".to_vec()),
        ("logo.svg", "text/html", b"<svg onload=alert(1)/>".to_vec()),
        ("report.pdf", "application/pdf", b"<html>not a pdf</html>".to_vec()),
        ("report.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", b"plain".to_vec()),
        ("ocr.json", "application/json", b"[1,2,3]".to_vec()),
        ("bin.txt", "text/plain", b"abc\0\0\0def".to_vec()),
    ] {
        let (s, v) = api.upload(&ws, &alice, name, ct, bytes).await;
        assert_eq!((s, v["error"]["code"].as_str()), (StatusCode::UNSUPPORTED_MEDIA_TYPE, Some("unsupported_media_type")), "{name}: {v}");
    }
    let (s, v) = api.upload(&ws, &alice, "empty.txt", "text/plain", Vec::new()).await;
    assert_eq!((s, v["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("empty_file")));
    assert_eq!(t.document_count().await, before, "refused uploads leave no document");
    let huge = "x".repeat(100 * 1024);
    let (s, v) = api.post(&format!("/v1/workspaces/{ws}/conversations/{conv}/messages"), &alice, json!({"content": huge})).await;
    assert_eq!((s, v["error"]["code"].as_str()), (StatusCode::PAYLOAD_TOO_LARGE, Some("payload_too_large")), "JSON bodies are limited");

    // Framework rejections are JSON too.
    let (s, v) = api.get(&format!("/v1/workspaces/{ws}/documents/not-a-uuid"), &alice).await;
    assert_eq!((s, v["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("bad_request")), "{v}");
    let (s, v) = api.get("/v2/nothing", &alice).await;
    assert_eq!((s, v["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));

    // CORS as configured; OpenAPI is served.
    let pre = api
        .http
        .request(Method::OPTIONS, format!("{}/v1/workspaces", api.base))
        .header("Origin", "https://app.example")
        .header("Access-Control-Request-Method", "POST")
        .header("Access-Control-Request-Headers", "authorization,content-type")
        .send()
        .await
        .unwrap();
    assert_eq!(pre.headers()["access-control-allow-origin"], "https://app.example");
    let (s, spec, _) = api.call(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(s, StatusCode::OK);
    assert!(spec["openapi"].as_str().unwrap().starts_with("3."));
    assert!(spec["paths"]["/v1/workspaces/{ws}/documents/{id}/raw-text"]["get"].is_object());
    run.stop().await;
    t.cleanup().await;
}

#[tokio::test]
async fn the_page_is_served_embedded_and_the_development_sign_in_is_off_by_default() {
    let t = TestEnv::new().await;
    let run = TestApp::spawn_stages(&t, StageName::Api, &[]).await;
    let api = Api::new(run.api_port);
    api.wait_ready().await;

    // The page and its modules come from the binary, with a strict policy.
    let resp = api.http.get(format!("{}/", api.base)).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let csp = resp.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'self'"), "{csp}");
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = resp.text().await.unwrap();
    for module in ["/ui/app.js", "/ui/app.css"] {
        assert!(html.contains(module));
        let r = api.http.get(format!("{}{module}", api.base)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{module}");
        assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    }
    let js = api.http.get(format!("{}/ui/app.js", api.base)).send().await.unwrap();
    assert!(js.headers()["content-type"].to_str().unwrap().starts_with("text/javascript"));
    let (s, body, _) = api.call(Method::GET, "/ui/../Cargo.toml", None, None).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{body}");
    let (s, _, _) = api.call(Method::GET, "/ui/secret.js", None, None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // Without API_DEV_SIGN_IN the sign-in by name does not exist.
    let (s, config, _) = api.call(Method::GET, "/ui/config.json", None, None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(config["dev_sign_in"], false);
    let (s, body, _) = api.call(Method::POST, "/dev/sign-in", None, Some(json!({"user": "mallory"}))).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], "not_found");
    run.stop().await;

    // With it, a name gets a token the API accepts; a bad name is refused.
    let run = TestApp::spawn_stages(&t, StageName::Api, &[("API_DEV_SIGN_IN", "true")]).await;
    let api = Api::new(run.api_port);
    api.wait_ready().await;
    let (_, config, _) = api.call(Method::GET, "/ui/config.json", None, None).await;
    assert_eq!(config["dev_sign_in"], true);
    let (s, signed, _) = api.call(Method::POST, "/dev/sign-in", None, Some(json!({"user": "carol"}))).await;
    assert_eq!(s, StatusCode::OK, "{signed}");
    let (s, list) = api.get("/v1/workspaces", signed["token"].as_str().unwrap()).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(list["workspaces"], json!([]));
    let (s, body, _) = api.call(Method::POST, "/dev/sign-in", None, Some(json!({"user": "a b"}))).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["code"], "invalid_field");
    run.stop().await;
    t.cleanup().await;
}
