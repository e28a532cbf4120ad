//! The in-process encoder's queue: callers at once get their own vectors,
//! in their order, the same as the encoder gives each alone; queries do
//! not queue. Needs `MINILM_MODEL_DIR` (scripts/stack writes it).

use std::path::PathBuf;

use crate::{Embedder, InputConvention, InputKind, SentenceEncoder};

fn model_dir() -> PathBuf {
    PathBuf::from(
        std::env::var("MINILM_MODEL_DIR").expect("MINILM_MODEL_DIR must point at all-MiniLM-L6-v2 (scripts/stack writes it to .local/env)"),
    )
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Request `r`'s texts: different counts and lengths per request.
fn request(r: usize) -> Vec<String> {
    (0..1 + r % 4)
        .map(|i| format!("document {r} chunk {i}: the boundary layer {} grows downstream", "thickness ".repeat(1 + (r * 7 + i) % 20)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_passages_are_batched_and_each_caller_gets_its_own_vectors() {
    let dir = model_dir();
    let embedder = Embedder::local(&dir, 2, rag_bert::Precision::Fp32, InputConvention::None).expect("model loads");
    let alone = SentenceEncoder::load(&dir, 1).expect("model loads");
    let requests: Vec<Vec<String>> = (0..24).map(request).collect();
    let tasks: Vec<_> = requests
        .iter()
        .cloned()
        .map(|texts| {
            let embedder = embedder.clone();
            tokio::spawn(async move { embedder.embed(&texts, InputKind::Passage).await })
        })
        .collect();
    for (texts, task) in requests.iter().zip(tasks) {
        let got = task.await.expect("task").expect("embedded");
        assert_eq!(got.len(), texts.len());
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let expected = alone.encode(&refs).expect("encode");
        for ((text, g), e) in texts.iter().zip(&got).zip(&expected) {
            let c = cosine(g, e);
            assert!(c > 0.9999, "{text:?}: cosine {c} to the encoder alone");
        }
    }
    // Nothing to embed is no request; a query does not wait for the queue.
    assert!(embedder.embed(&[], InputKind::Passage).await.expect("empty").is_empty());
    let q = embedder.embed(&["boundary layer".to_string()], InputKind::Query).await.expect("query");
    let e = alone.encode(&["boundary layer"]).expect("encode");
    assert!(cosine(&q[0], &e[0]) > 0.9999);
}
