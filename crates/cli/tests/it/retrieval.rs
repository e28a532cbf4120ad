//! Retrieval on the real stack: BM25 ranking, diacritic-insensitive
//! queries, hybrid with the local encoder, language-aware fusion, document
//! filter, deleted documents, and tenant isolation (two workspaces with
//! overlapping content never see each other, in any mode).

use std::time::Duration;

use crate::app::TestApp;
use crate::common::*;
use rag_events::{DocumentDeleted, Envelope};

async fn search(t: &TestEnv, workspace: &str, query: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["search", query, "--workspace", workspace, "--json"];
    args.extend_from_slice(extra);
    let (ok, out, err) = t.run(&args).await;
    assert!(ok, "search failed: {err}");
    serde_json::from_str(&out).unwrap()
}

fn filenames(result: &serde_json::Value) -> Vec<String> {
    result["chunks"].as_array().unwrap().iter().map(|c| c["filename"].as_str().unwrap_or("").to_string()).collect()
}

const EN_EXTRA: &[(&str, &str)] = &[("EMBEDDER", "local"), ("EMBEDDING_THREADS", "1")];

#[tokio::test(flavor = "multi_thread")]
async fn hybrid_search_ranks_scopes_and_isolates_workspaces() {
    let model_dir = stack_env().get("MINILM_MODEL_DIR").cloned().expect("MINILM_MODEL_DIR");
    let t = TestEnv::new().await.with_env(&[("EMBEDDING_MODEL_DIR", &model_dir), EN_EXTRA[0], EN_EXTRA[1]]);
    let _all = TestApp::spawn(&t, &[]).await;
    let other = format!("{}-other", t.workspace);
    let shared = "Quarterly revenue rose sharply thanks to strong cloud sales in Asia.";
    t.upload_files(
        &t.workspace,
        &[
            ("revenue.txt", shared),
            ("cats.txt", "The cat sleeps on the warm windowsill every afternoon."),
            ("vi.txt", "Doanh thu thuần năm 2023 tăng 12% so với năm trước.\n\nLợi nhuận gộp đạt 312 tỷ đồng."),
        ],
    )
    .await;
    t.upload_files(&other, &[("revenue-other.txt", shared), ("secret.txt", "Confidential revenue plan for the merger.")]).await;
    wait_until("five documents ingested", Duration::from_secs(120), || async { t.ingested_count().await == 5 }).await;

    // Lexical: the matching document first, with positions into the raw text.
    let r = search(&t, &t.workspace, "revenue cloud", &["--mode", "lexical"]).await;
    assert_eq!(filenames(&r)[0], "revenue.txt");
    let top = &r["chunks"][0];
    assert_eq!((top["char_start"].as_i64(), top["page_start"].as_i64()), (Some(0), Some(0)));
    assert!(top["bm25"].as_f64().unwrap() > 0.0);
    // Without diacritics, the Vietnamese document is still found.
    let r = search(&t, &t.workspace, "doanh thu tang", &["--mode", "lexical"]).await;
    assert_eq!(filenames(&r), vec!["vi.txt"]);

    // Dense: a paraphrase with no shared word finds the right document.
    let r = search(&t, &t.workspace, "How did the company's income change?", &["--mode", "dense"]).await;
    assert_eq!(filenames(&r)[0], "revenue.txt");
    // Hybrid on English: both sides take part.
    let r = search(&t, &t.workspace, "income growth from cloud", &[]).await;
    assert_eq!(r["dense_used"], serde_json::json!(true));
    assert_eq!(filenames(&r)[0], "revenue.txt");
    // Hybrid on Vietnamese with an English-only embedder: exactly lexical.
    let hybrid = search(&t, &t.workspace, "lợi nhuận gộp", &[]).await;
    let lexical = search(&t, &t.workspace, "lợi nhuận gộp", &["--mode", "lexical"]).await;
    assert_eq!(hybrid["query_language"], "vi");
    assert_eq!(hybrid["dense_used"], serde_json::json!(false));
    assert_eq!(filenames(&hybrid), filenames(&lexical));

    // Tenant isolation, every mode: nothing of the other workspace.
    for mode in ["lexical", "dense", "hybrid"] {
        for query in ["revenue", "Confidential revenue plan for the merger", "cloud sales"] {
            let r = search(&t, &t.workspace, query, &["--mode", mode, "--top-k", "50"]).await;
            let names = filenames(&r);
            assert!(!names.iter().any(|n| n == "secret.txt" || n == "revenue-other.txt"), "{mode} {query}: {names:?}");
            let r = search(&t, &other, query, &["--mode", mode, "--top-k", "50"]).await;
            assert!(filenames(&r).iter().all(|n| n == "secret.txt" || n == "revenue-other.txt"));
        }
    }

    // Document filter.
    let ids: Vec<(uuid::Uuid, String)> =
        t.documents().await.into_iter().filter(|d| d.workspace_id == t.workspace).map(|d| (d.id, d.filename.unwrap())).collect();
    let cats = ids.iter().find(|(_, f)| f == "cats.txt").unwrap().0.to_string();
    let r = search(&t, &t.workspace, "revenue cat", &["--document", &cats]).await;
    assert_eq!(filenames(&r), vec!["cats.txt"]);

    // A deleted document leaves search at once.
    let revenue = ids.iter().find(|(_, f)| f == "revenue.txt").unwrap().0.to_string();
    t.producer()
        .send(&DocumentDeleted { envelope: Envelope::originating(&t.workspace, "test@0"), document_id: revenue, deleted_by: "test".into() })
        .await
        .unwrap();
    wait_until("deletion projected", Duration::from_secs(30), || async {
        !filenames(&search(&t, &t.workspace, "revenue cloud", &["--mode", "lexical"]).await).contains(&"revenue.txt".to_string())
    })
    .await;
    for mode in ["dense", "hybrid"] {
        let r = search(&t, &t.workspace, "quarterly revenue cloud sales", &["--mode", mode]).await;
        assert!(!filenames(&r).contains(&"revenue.txt".to_string()), "{mode}");
    }
    t.cleanup().await;
}
