//! The S3-compatible server of the local stack, verified with aws-sdk-s3:
//! put, get, head, delete and multipart upload.

use crate::common::*;
use rag_blobs::{BlobConfig, BlobStore};

#[tokio::test(flavor = "multi_thread")]
async fn put_get_head_delete_and_multipart() {
    let env = stack_env();
    let store = BlobStore::new(&BlobConfig {
        endpoint: env["S3_ENDPOINT"].clone(),
        region: "us-east-1".into(),
        bucket: format!("verify-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]),
        access_key: env["S3_ACCESS_KEY"].clone(),
        secret_key: env["S3_SECRET_KEY"].clone().into(),
        cache_bytes: 1024 * 1024,
    });
    // The same bucket without the cache of objects this store wrote.
    let uncached = BlobStore::new(&BlobConfig {
        endpoint: env["S3_ENDPOINT"].clone(),
        region: "us-east-1".into(),
        bucket: store.bucket().to_string(),
        access_key: env["S3_ACCESS_KEY"].clone(),
        secret_key: env["S3_SECRET_KEY"].clone().into(),
        cache_bytes: 0,
    });
    store.ensure_bucket().await.unwrap();
    store.ensure_bucket().await.unwrap(); // idempotent
    store.ping().await.unwrap();

    let stored = store.put_bytes("a/small.txt", "Tiếng Việt có dấu".as_bytes().to_vec(), "text/plain").await.unwrap();
    assert_eq!(stored.uri, format!("s3://{}/a/small.txt", store.bucket()));
    assert_eq!(store.key_of(&stored.uri).unwrap(), "a/small.txt");
    assert_eq!(store.get("a/small.txt").await.unwrap(), "Tiếng Việt có dấu".as_bytes());
    assert_eq!(uncached.get("a/small.txt").await.unwrap(), "Tiếng Việt có dấu".as_bytes(), "on the server, not only kept");
    assert_eq!(store.head("a/small.txt").await.unwrap(), Some(stored.size));
    assert_eq!(store.head("a/missing").await.unwrap(), None);
    store.delete("a/small.txt").await.unwrap();
    assert_eq!(store.head("a/small.txt").await.unwrap(), None);
    let missing = store.get("a/small.txt").await.unwrap_err();
    assert!(!missing.is_transient(), "{missing}");
    // A document's objects deleted by prefix: no copy outlives them.
    store.put_bytes("w/d1/segments/s.json", b"[]".to_vec(), "application/json").await.unwrap();
    assert_eq!(store.get("w/d1/segments/s.json").await.unwrap(), b"[]");
    assert_eq!(store.delete_prefix("w/d1/").await.unwrap(), 1);
    assert!(store.get("w/d1/segments/s.json").await.is_err(), "read after the prefix was deleted");

    // 20 MiB + 3 bytes: three parts, the last one short.
    let dir_scratch = crate::common::scratch_dir("rag-engine-s3");
    let dir = dir_scratch.path().to_path_buf();
    let path = dir.join("big.bin");
    let data: Vec<u8> = (0..(20 * 1024 * 1024 + 3)).map(|i| (i % 251) as u8).collect();
    std::fs::write(&path, &data).unwrap();
    let (sha, size) = rag_blobs::hash_file(&path).await.unwrap();
    assert!(size > rag_blobs::MULTIPART_THRESHOLD);
    let big = store.put_file("b/big.bin", &path, size, &sha, "application/octet-stream").await.unwrap();
    assert_eq!(big.size, size);
    assert_eq!(store.head("b/big.bin").await.unwrap(), Some(size));
    assert!(store.get("b/big.bin").await.unwrap() == data, "multipart object reads back identical");
    store.delete("b/big.bin").await.unwrap();

    // A wrong secret is a clear, permanent error.
    let bad = BlobStore::new(&BlobConfig {
        endpoint: env["S3_ENDPOINT"].clone(),
        region: "us-east-1".into(),
        bucket: store.bucket().to_string(),
        access_key: env["S3_ACCESS_KEY"].clone(),
        secret_key: "wrong".into(),
        cache_bytes: 0,
    });
    let err = bad.put_bytes("x", b"x".to_vec(), "text/plain").await.unwrap_err();
    assert!(!err.is_transient(), "{err}");
}
