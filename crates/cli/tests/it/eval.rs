//! `rag-dev eval retrieval` and `eval answers` end to end on the repository's small
//! Vietnamese/English BEIR set: ingestion through the real pipeline, every
//! mode, per-language rows, and the language-aware fusion (Vietnamese
//! queries with the English-only local model rank exactly as lexical).

use crate::common::*;

#[tokio::test(flavor = "multi_thread")]
async fn eval_retrieval_reports_every_mode_per_language() {
    let model_dir = stack_env().get("MINILM_MODEL_DIR").cloned().expect("MINILM_MODEL_DIR");
    let t = TestEnv::new().await.with_env(&[("EMBEDDING_MODEL_DIR", &model_dir), ("EMBEDDING_THREADS", "1")]);
    let dir = repo_root().join("eval/vi-sample");
    let (ok, out, err) =
        t.run_dev(&["eval", "retrieval", dir.to_str().unwrap(), "--embedder", "local", "--strip-diacritics", "--json"]).await;
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // Per form: the 6 accented Vietnamese questions as written, and all 8
    // Vietnamese ones without diacritics (2 were typed so), all told
    // Vietnamese; the English ones as they are.
    assert_eq!(v["by_form"]["accented"]["hybrid"]["queries"], 6, "{}", v["by_form"]);
    assert_eq!(v["by_form"]["unaccented"]["hybrid"]["queries"], 8, "{}", v["by_form"]);
    assert_eq!(v["by_form"]["unaccented"]["classified"], serde_json::json!({"vi": 8}));
    assert_eq!(v["by_form"]["english"]["lexical"]["queries"], 4);
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

#[tokio::test(flavor = "multi_thread")]
async fn eval_answers_scores_extractive_answers_through_the_pipeline() {
    let t = TestEnv::new().await;
    let dir = repo_root().join("eval/vi-dev");
    let (ok, out, err) = t.run_dev(&["eval", "answers", dir.to_str().unwrap(), "--json"]).await;
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["run"]["questions"], 78);
    assert_eq!(v["run"]["answers_by"], "extractive");
    // Twenty-two questions the passages do not answer: scored apart.
    assert_eq!(v["unanswerable"]["questions"], 22);
    // The extractive answer abstains when no sentence shares enough of the
    // question's words: the first twelve are off the passages' facts (6 or
    // more abstained), the ten added later (u13-u22) are near misses that
    // share most of their words with a passage ("ngoại trú" for its
    // "nội trú"), which only the model tells apart.
    assert!(v["unanswerable"]["abstained"].as_f64().unwrap() >= 0.4, "{}", v["unanswerable"]);
    assert_eq!(v["all"]["questions"], 56);
    assert_eq!(v["all"]["failed"], 0);
    // Every citation slices the raw text exactly; extractive answers quote
    // sentences, so nothing is dropped or left unlocated.
    assert_eq!(v["all"]["bad_slices"], 0, "{v}");
    assert_eq!(v["all"]["dropped_source_ids"], 0);
    assert_eq!(v["all"]["unlocated_quotes"], 0);
    // Twenty questions ask two things: each part is searched and answered
    // on its own, so both answers are cited.
    assert_eq!(v["all"]["compound_questions"], 20);
    assert!(v["all"]["all_parts_in_citation"].as_f64().unwrap() >= 0.8, "{v}");
    // (Both questions typed without diacritics count as Vietnamese.)
    assert_eq!(v["by_language"]["vi"]["questions"], 39);
    assert_eq!(v["by_language"]["en"]["questions"], 17);
    // Vietnamese questions share words with their passage: the extractive
    // answer cites it and the answer text lies in the cited sentence.
    assert!(v["by_language"]["vi"]["gold_cited"].as_f64().unwrap() >= 0.9, "{v}");
    assert!(v["by_language"]["vi"]["answer_in_citation"].as_f64().unwrap() >= 0.9, "{v}");
    let per_question = v["questions"].as_array().unwrap();
    assert_eq!(per_question.len(), 78);
    assert!(per_question.iter().all(|q| q["latency_ms"].as_u64().unwrap() > 0 && q["mode"] != ""));
    // Latencies are {p50, p95}; an extractive answer's first words are the answer.
    let first = &v["all"]["first_token_ms"];
    assert!(first["p50"].as_u64().unwrap() > 0 && first["p95"].as_u64() >= first["p50"].as_u64(), "{first}");
    // Per form: 36 Vietnamese questions written with marks, 1 with an
    // English term ("metro"), 2 without marks, 17 English.
    let forms: Vec<(String, u64)> =
        v["by_form"].as_object().unwrap().iter().map(|(f, t)| (f.clone(), t["questions"].as_u64().unwrap())).collect();
    assert_eq!(forms, [("accented".to_string(), 36), ("english".to_string(), 17), ("mixed".to_string(), 1), ("unaccented".to_string(), 2)]);

    // The same questions typed without diacritics: the Vietnamese ones are
    // still told Vietnamese, and every reply to them (an extractive answer
    // quotes the passage; an abstention) is written with marks.
    let (ok, out, err) = t.run_dev(&["eval", "answers", dir.to_str().unwrap(), "--strip-diacritics", "--json"]).await;
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // (The one with "metro" stays mixed.)
    assert_eq!(v["by_form"]["unaccented"]["questions"], 38, "{}", v["by_form"]);
    assert_eq!(v["by_language"]["vi"]["questions"], 39);
    let replies = &v["vietnamese_replies"];
    assert_eq!((replies["questions"].as_u64(), replies["with_marks"].as_u64()), (Some(54), Some(54)), "{replies}");
    assert_eq!(v["all"]["bad_slices"], 0);
    t.cleanup().await;
}
