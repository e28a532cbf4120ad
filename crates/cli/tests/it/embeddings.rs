//! The indexer with an OpenAI-compatible embedder (a local server speaking
//! the wire protocol): vectors land in pgvector under their model's own
//! HNSW index, and DocumentIngested names the model and dimension.

use std::time::Duration;

use crate::app::TestApp;
use crate::common::*;
use axum::routing::post;
use axum::{Json, Router};
use rag_store::sqlx;
use rag_store::testing;

const DIM: usize = 8;

/// The distinct (model, dimension) the documents of the test's database were embedded with.
async fn embedding_identities(t: &TestEnv) -> Vec<(Option<String>, Option<i32>)> {
    let docs = testing::document_embeddings(&t.pool).await.unwrap();
    let distinct: std::collections::BTreeSet<_> = docs.into_iter().map(|d| (d.embedding_model, d.embedding_dimension)).collect();
    distinct.into_iter().collect()
}

async fn embeddings(Json(body): Json<serde_json::Value>) -> Json<serde_json::Value> {
    let data: Vec<serde_json::Value> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let t = t.as_str().unwrap();
            let v: Vec<f32> = (0..DIM).map(|k| ((t.len() * 31 + k * 7) % 13) as f32 + 1.0).collect();
            serde_json::json!({"object": "embedding", "index": i, "embedding": v})
        })
        .collect();
    Json(serde_json::json!({"object": "list", "data": data, "model": "fake-embed-8"}))
}

#[tokio::test(flavor = "multi_thread")]
async fn chunks_are_embedded_with_the_configured_model() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, Router::new().route("/v1/embeddings", post(embeddings))).await.unwrap() });

    let t = TestEnv::new().await;
    let base = format!("http://{addr}/v1");
    let _all = TestApp::spawn(
        &t,
        &[
            ("EMBEDDER", "openai"),
            ("EMBEDDING_BASE_URL", &base),
            ("EMBEDDING_MODEL", "fake-embed-8"),
            ("EMBEDDING_API_KEY", "k"),
            ("EMBEDDING_DIMENSION", "8"),
        ],
    )
    .await;
    let dir_scratch = crate::common::scratch_dir("rag-engine-embed");
    let dir = dir_scratch.path().to_path_buf();
    std::fs::write(dir.join("a.txt"), "Doanh thu tăng.\n\nLợi nhuận giảm.").unwrap();
    let (ok, _, err) = t.run(&["upload", dir.to_str().unwrap(), "--workspace", &t.workspace]).await;
    assert!(ok, "{err}");
    wait_until("ingested", Duration::from_secs(90), || async { t.only_status().await.as_deref() == Some("ingested") }).await;
    let docs = testing::document_embeddings(&t.pool).await.unwrap();
    assert_eq!(docs.len(), 1);
    assert_eq!((docs[0].embedding_model.as_deref(), docs[0].embedding_dimension), (Some("fake-embed-8"), Some(8)));
    let rows = testing::all_chunks(&t.pool).await.unwrap();
    assert!(!rows.is_empty());
    for c in &rows {
        assert_eq!((c.embedding_model.as_deref(), c.embedding_dimension), (Some("fake-embed-8"), Some(8)));
        let norm: f32 = c.embedding.as_ref().unwrap().iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "stored unit vectors");
    }
    // The index definition is what is tested: raw SQL on the catalogue.
    let hnsw: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_indexes WHERE tablename = 'search_chunks' AND indexdef ILIKE '%hnsw%vector(8)%fake-embed-8%'",
    )
    .fetch_one(&t.pool)
    .await
    .unwrap();
    assert_eq!(hnsw, 1, "one HNSW index for this model and dimension");
    // The vector index answers a nearest-neighbour query.
    let scope = rag_store::search::SearchScope { workspace_id: &t.workspace, document_ids: &[] };
    let query = rows[0].embedding.as_ref().unwrap();
    let nearest = rag_store::search::dense(&t.pool, &scope, "fake-embed-8", query, 1).await.unwrap();
    assert_eq!(nearest.len(), 1);
    assert!(nearest[0].chunk_id.starts_with("chunk-"));
    t.cleanup().await;
}

/// The in-process all-MiniLM-L6-v2 encoder in the real pipeline: 384-d unit
/// vectors under the model's own index, and the nearest chunk to a
/// paraphrased question is the one that answers it.
#[tokio::test(flavor = "multi_thread")]
async fn the_local_encoder_embeds_chunks_in_the_pipeline() {
    let model_dir = stack_env().get("MINILM_MODEL_DIR").cloned().expect("scripts/stack writes MINILM_MODEL_DIR");
    let t = TestEnv::new().await;
    let _all = TestApp::spawn(&t, &[("EMBEDDER", "local"), ("EMBEDDING_MODEL_DIR", &model_dir), ("EMBEDDING_THREADS", "1")]).await;
    let dir_scratch = crate::common::scratch_dir("rag-engine-local-embed");
    let dir = dir_scratch.path().to_path_buf();
    std::fs::write(dir.join("pets.txt"), "The cat sleeps on the warm windowsill every afternoon.").unwrap();
    std::fs::write(dir.join("money.txt"), "Quarterly revenue rose sharply thanks to strong cloud sales.").unwrap();
    let (ok, _, err) = t.run(&["upload", dir.to_str().unwrap(), "--workspace", &t.workspace]).await;
    assert!(ok, "{err}");
    wait_until("both ingested", Duration::from_secs(120), || async { t.ingested_count().await == 2 }).await;
    let models = embedding_identities(&t).await;
    assert_eq!(models, vec![(Some("all-MiniLM-L6-v2".to_string()), Some(384))]);

    let encoder = rag_bert::SentenceEncoder::load(std::path::Path::new(&model_dir), 1).unwrap();
    let query = encoder.encode(&["How did the company's income change?"]).unwrap().remove(0);
    let scope = rag_store::search::SearchScope { workspace_id: &t.workspace, document_ids: &[] };
    let nearest = rag_store::search::dense(&t.pool, &scope, "all-MiniLM-L6-v2", &query, 1).await.unwrap();
    assert_eq!(nearest.len(), 1);
    assert_eq!(nearest[0].filename.as_deref(), Some("money.txt"));
    t.cleanup().await;
}

#[tokio::test]
async fn multilingual_e5_in_process_embeds_and_retrieves_vietnamese() {
    // The default embedder: multilingual-e5-small in process, installed by
    // scripts/stack (no Python server in the path). `auto` is EMBEDDER's
    // default (the tests' environment says `none` unless a test asks), and
    // .local/env points EMBEDDING_MODEL_DIR at e5 as here.
    let e5_dir = std::env::var("E5_MODEL_DIR").expect("E5_MODEL_DIR (scripts/stack writes it to .local/env)");
    let profile = [("EMBEDDER", "auto".to_string()), ("EMBEDDING_MODEL_DIR", e5_dir)];
    let t = TestEnv::new().await;
    let vars: Vec<(&str, &str)> = profile.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let _all = TestApp::spawn(&t, &vars).await;
    let dir_scratch = crate::common::scratch_dir("rag-engine-e5");
    let dir = dir_scratch.path().to_path_buf();
    for (name, text) in [
        ("loi-nhuan.txt", "Lợi nhuận sau thuế năm 2023 giảm 4% do chi phí lãi vay tăng mạnh."),
        ("bao.txt", "Bão số 3 gây ngập lụt nghiêm trọng tại các tỉnh ven biển miền Bắc."),
        ("co-tuc.txt", "Đại hội cổ đông thông qua việc chia cổ tức bằng tiền mặt với tỷ lệ 12%."),
        ("tuyen-dung.txt", "Công ty tuyển thêm 50 kỹ sư phần mềm cho trung tâm nghiên cứu tại Đà Nẵng."),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let (ok, _, err) = t.run(&["upload", dir.to_str().unwrap(), "--workspace", &t.workspace]).await;
    assert!(ok, "{err}");
    wait_until("all four ingested", Duration::from_secs(120), || async { t.ingested_count().await == 4 }).await;
    // The input convention is part of the index identity.
    let models = embedding_identities(&t).await;
    assert_eq!(models, vec![(Some("multilingual-e5-small+prefix".to_string()), Some(384))]);

    // Questions that share no word with their passage: only the dense side
    // can find them, in Vietnamese and across languages.
    let search = |query: &'static str, mode: &'static str| {
        let mut cmd = t.command(&["search", query, "--workspace", &t.workspace, "--mode", mode, "--json"]);
        for (k, v) in &vars {
            cmd.env(k, v);
        }
        async move {
            let out = cmd.output().await.unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
        }
    };
    // Typed without marks: restored from the workspace's text before it is
    // embedded, so the dense side reads it as Vietnamese.
    let unaccented = search("loi nhuan sau thue nam 2023 giam", "hybrid").await;
    assert_eq!(unaccented["query_language"], "vi", "{unaccented}");
    assert_eq!(unaccented["restoration"]["text"], "lợi nhuận sau thuế năm 2023 giảm", "{unaccented}");
    assert_eq!(unaccented["chunks"][0]["filename"], "loi-nhuan.txt");
    assert_eq!(unaccented["chunks"][0]["dense_rank"], 1, "{unaccented}");
    for (query, want) in [
        ("Vì sao công ty kiếm được ít tiền hơn?", "loi-nhuan.txt"),
        ("thiên tai làm nước dâng ở đâu", "bao.txt"),
        ("Where did the storm cause flooding?", "bao.txt"),
    ] {
        let dense = search(query, "dense").await;
        assert_eq!(dense["chunks"][0]["filename"], want, "dense for {query:?}: {dense}");
        // Hybrid fuses both sides: the passage the dense side ranks first is
        // among the results even when the lexical side matched other words
        // ("công ty"), since a Vietnamese query lets the e5 side count.
        let hybrid = search(query, "hybrid").await;
        assert_eq!(hybrid["dense_used"], true, "{hybrid}");
        let found = hybrid["chunks"].as_array().unwrap().iter().find(|c| c["filename"] == want);
        assert_eq!(found.map(|c| c["dense_rank"].clone()), Some(1.into()), "hybrid for {query:?}: {hybrid}");
    }
    t.cleanup().await;
}

/// Moving a workspace onto multilingual-e5 (issue 34: the new default)
/// without downtime: the pipeline restarts with e5, `replay chunking`
/// builds a new version (chunked in e5's pieces, embedded by e5) beside the
/// MiniLM one, searches keep finding the documents throughout, and at the
/// end every document and chunk is on e5 and a cross-lingual question is
/// found by the dense side alone.
#[tokio::test(flavor = "multi_thread")]
async fn a_workspace_moves_onto_e5_by_replay_while_search_keeps_working() {
    let minilm = stack_env().get("MINILM_MODEL_DIR").cloned().expect("scripts/stack writes MINILM_MODEL_DIR");
    let e5 = std::env::var("E5_MODEL_DIR").expect("E5_MODEL_DIR (scripts/stack writes it to .local/env)");
    let t = TestEnv::new().await.with_env(&[("EMBEDDING_THREADS", "1")]);
    let ws = t.workspace.clone();
    let before = TestApp::spawn(&t, &[("EMBEDDER", "local"), ("EMBEDDING_MODEL_DIR", &minilm)]).await;
    let docs = [
        ("bao.txt", "Bão số 3 gây ngập lụt nghiêm trọng tại các tỉnh ven biển miền Bắc vào tháng Chín."),
        ("co-tuc.txt", "Đại hội cổ đông thông qua việc chia cổ tức bằng tiền mặt với tỷ lệ 12%."),
        ("badges.txt", "Visitors collect their badges at the reception desk on the ground floor."),
    ];
    t.upload_files(&ws, &docs).await;
    let models = || async {
        let docs = testing::document_embeddings(&t.pool).await.unwrap();
        let docs = docs.into_iter().filter(|d| d.status == rag_store::documents::DocumentStatus::Ingested).map(|d| d.embedding_model);
        let chunks = testing::all_chunks(&t.pool).await.unwrap().into_iter().map(|c| c.embedding_model);
        let distinct: std::collections::BTreeSet<String> = docs.chain(chunks).map(|m| m.unwrap_or_else(|| "-".into())).collect();
        distinct.into_iter().collect::<Vec<_>>()
    };
    wait_until("three documents ingested with MiniLM", Duration::from_secs(120), || async { t.ingested_count().await == 3 }).await;
    assert_eq!(models().await, ["all-MiniLM-L6-v2"]);
    before.stop().await;

    // The pipeline now runs e5 (what a bare `run all` does after scripts/stack up).
    let e5_env = [("EMBEDDER", "auto"), ("EMBEDDING_MODEL_DIR", e5.as_str())];
    let _after = TestApp::spawn(&t, &e5_env).await;
    let search = |query: &'static str, mode: &'static str| {
        let mut cmd = t.command(&["search", query, "--workspace", &ws, "--mode", mode, "--json"]);
        for (k, v) in e5_env {
            cmd.env(k, v);
        }
        async move {
            let out = cmd.output().await.unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
        }
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let searcher = {
        let stop = stop.clone();
        async move {
            let mut found = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) || found < 3 {
                // A word of the passage: the lexical side finds it on either version.
                let hits = search("badges reception", "hybrid").await;
                assert_eq!(hits["chunks"][0]["filename"], "badges.txt", "during the move: {hits}");
                found += 1;
            }
            found
        }
    };
    let replay = async {
        let mut cmd = t.command(&["replay", "chunking", "--profile", "fine@1", "--workspace", &ws, "--json", "--timeout", "300"]);
        for (k, v) in e5_env {
            cmd.env(k, v);
        }
        let out = cmd.output().await.unwrap();
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        out
    };
    let (out, searches) = tokio::join!(replay, searcher);
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["documents_on_new_version"], 3, "{summary}");
    assert!(searches >= 3);
    assert_eq!(models().await, ["multilingual-e5-small+prefix"], "every document and chunk embedded by e5");
    // English about a Vietnamese passage, no word in common: dense only.
    let dense = search("Where did the storm cause flooding?", "dense").await;
    assert_eq!(dense["chunks"][0]["filename"], "bao.txt", "{dense}");
    t.cleanup().await;
}
