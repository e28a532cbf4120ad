//! The optional rerank step over a stub speaking the `/v1/rerank` wire
//! protocol: it reorders the fused list, and any failure leaves the fused
//! order as it was.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::retriever::{rerank, RetrievedChunk};

fn chunk(id: &str, text: &str) -> RetrievedChunk {
    RetrievedChunk {
        hit: rag_store::search::ChunkHit {
            chunk_id: id.into(),
            document_id: uuid::Uuid::nil(),
            chunking_version: "v1".into(),
            chunk_index: 0,
            content: text.into(),
            page_start: 0,
            page_end: 0,
            char_start: 0,
            char_end: text.chars().count() as i64,
            line_start: None,
            line_end: None,
            filename: None,
            embedding_model: None,
            score: 0.0,
        },
        score: 0.0,
        lexical_rank: None,
        dense_rank: None,
        bm25: None,
        cosine: None,
        language: rag_retrieval::Language::En,
        rerank_score: None,
    }
}

/// Answers every connection with `status` and `body`, whatever was asked.
async fn stub(status: &'static str, body: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let _ = conn.read(&mut buf).await;
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(reply.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}/v1")
}

fn reranker(url: &str) -> rag_embed::Reranker {
    rag_embed::Reranker::new(rag_embed::RerankConfig {
        base_url: url.into(),
        model: "stub".into(),
        api_key: None,
        timeout: Duration::from_millis(500),
    })
    .unwrap()
}

fn fused() -> Vec<RetrievedChunk> {
    vec![chunk("a", "weather"), chunk("b", "revenue 2022"), chunk("c", "revenue 2023")]
}

fn ids(chunks: &[RetrievedChunk]) -> Vec<&str> {
    chunks.iter().map(|c| c.hit.chunk_id.as_str()).collect()
}

#[tokio::test]
async fn the_rerankers_order_replaces_the_fused_one() {
    let url = stub("200 OK", r#"{"results": [{"index": 2, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.2}]}"#).await;
    let mut chunks = fused();
    let report = rerank(&reranker(&url), "revenue 2023", &mut chunks).await;
    assert_eq!(report.error, None);
    assert_eq!((report.model.as_str(), report.candidates), ("stub", 3));
    // c and a as ranked; b, left out by the server, after them.
    assert_eq!(ids(&chunks), ["c", "a", "b"]);
    assert_eq!(chunks.iter().map(|c| c.rerank_score).collect::<Vec<_>>(), [Some(0.9), Some(0.2), None]);
}

#[tokio::test]
async fn any_failure_keeps_the_fused_order() {
    let garbage = stub("200 OK", r#"{"results": [{"index": 0, "rel"#).await;
    let overloaded = stub("503 Service Unavailable", r#"{"error": "loading model"}"#).await;
    for url in [garbage.as_str(), overloaded.as_str(), "http://127.0.0.1:9/v1"] {
        let mut chunks = fused();
        let report = rerank(&reranker(url), "revenue 2023", &mut chunks).await;
        assert!(report.error.is_some(), "{url}");
        assert_eq!(ids(&chunks), ["a", "b", "c"], "{url}: {:?}", report.error);
        assert!(chunks.iter().all(|c| c.rerank_score.is_none()));
    }
}
