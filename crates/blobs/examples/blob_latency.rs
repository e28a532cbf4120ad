//! PUT and GET latency of small objects against the configured S3 server:
//! `cargo run --release -p rag-blobs --example blob_latency` with the
//! stack's environment loaded (`. .local/env`). Found the ~41 ms GETs that
//! crates/objectstore removes with TCP_NODELAY (docs/local-stack.md).

use std::time::Instant;

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cfg = rag_blobs::BlobConfig {
        endpoint: env("S3_ENDPOINT", "http://127.0.0.1:19000"),
        region: env("S3_REGION", "us-east-1"),
        bucket: env("S3_BUCKET", "rag-engine"),
        access_key: env("S3_ACCESS_KEY", "rag-engine"),
        secret_key: env("S3_SECRET_KEY", "rag-engine-secret").into(),
        // Timed against the server.
        cache_bytes: 0,
    };
    let store = rag_blobs::BlobStore::new(&cfg);
    store.ensure_bucket().await?;
    for size in [500usize, 5_000, 50_000] {
        let data = vec![b'x'; size];
        for attempt in 0..5 {
            let started = Instant::now();
            store.put_bytes("latency-probe/object", data.clone(), "application/json").await?;
            let put = started.elapsed();
            let started = Instant::now();
            store.get("latency-probe/object").await?;
            println!("{size:>6} B, try {attempt}: put {put:?}, get {:?}", started.elapsed());
        }
    }
    Ok(())
}
