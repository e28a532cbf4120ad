//! `rag-engine eval retrieval` end to end on the repository's small
//! Vietnamese/English BEIR set: ingestion through the real pipeline, every
//! mode, per-language rows, and the language-aware fusion (Vietnamese
//! queries with the English-only local model rank exactly as lexical).

mod common;

use common::*;

#[tokio::test(flavor = "multi_thread")]
async fn eval_retrieval_reports_every_mode_per_language() {
    let model_dir = stack_env().get("EMBEDDING_MODEL_DIR").cloned().expect("EMBEDDING_MODEL_DIR");
    let t = TestEnv::new().await.with_env(&[("EMBEDDING_MODEL_DIR", &model_dir), ("EMBEDDING_THREADS", "1")]);
    let dir = repo_root().join("eval/vi-sample");
    let (ok, out, err) = t.run(&["eval", "retrieval", dir.to_str().unwrap(), "--embedder", "local", "--json"]).await;
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for mode in ["lexical", "dense", "hybrid"] {
        for metric in ["ndcg@10", "recall@10", "recall@100", "mrr@10"] {
            let x = v[mode][metric].as_f64().unwrap_or_else(|| panic!("{mode}.{metric} missing: {v}"));
            assert!((0.0..=1.0).contains(&x));
        }
        assert_eq!(v[mode]["queries"], 12);
    }
    assert_eq!(v["by_language"]["vi"]["lexical"]["queries"], 8);
    assert_eq!(v["by_language"]["en"]["hybrid"]["queries"], 4);
    // Vietnamese: the dense side is skipped, so hybrid is lexical exactly.
    assert_eq!(v["by_language"]["vi"]["hybrid"], v["by_language"]["vi"]["lexical"]);
    // The set is easy: lexical finds most Vietnamese answers, with or without diacritics.
    assert!(v["by_language"]["vi"]["lexical"]["recall@10"].as_f64().unwrap() >= 0.75, "{v}");
    assert_eq!(v["run"]["documents"], 20);
    t.cleanup().await;
}
