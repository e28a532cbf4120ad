//! Object storage for originals and claim-checked payloads.
//!
//! Objects are addressed as `s3://bucket/key`; events carry these URIs and
//! the SHA-256 of the bytes, never the bytes themselves.

mod cache;

use std::path::Path;
use std::sync::Arc;

use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region, RequestChecksumCalculation, ResponseChecksumValidation};
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use aws_sdk_s3::Client;
use aws_smithy_http_client::tls;
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

/// Files above this size go up in parts, so a large upload never needs to be
/// held in memory and a failed part is retried alone.
pub const MULTIPART_THRESHOLD: u64 = 16 * 1024 * 1024;
/// Part size for multipart uploads (S3 requires at least 5 MiB).
pub const PART_SIZE: usize = 8 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct BlobConfig {
    pub endpoint: String,
    pub region: String,
    pub bucket: String,
    pub access_key: String,
    pub secret_key: SecretString,
    /// Bytes of objects written by this process kept for its own reads
    /// (`BLOB_CACHE_MB`; 0: none). See [`cache`].
    pub cache_bytes: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("object storage {op} {key}: {message}")]
    Request { op: &'static str, key: String, message: String, transient: bool },
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("not an s3:// URI of bucket {bucket}: {uri}")]
    BadUri { uri: String, bucket: String },
}

impl BlobError {
    /// Whether retrying may help (network trouble, timeouts, 5xx, throttling).
    pub fn is_transient(&self) -> bool {
        match self {
            BlobError::Request { transient, .. } => *transient,
            BlobError::Io { .. } | BlobError::BadUri { .. } => false,
        }
    }
}

fn request_error<E, R>(op: &'static str, key: &str, err: SdkError<E, R>) -> BlobError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let transient = match &err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => true,
        SdkError::ServiceError(e) => {
            let code = e.err().code().unwrap_or_default();
            matches!(code, "SlowDown" | "InternalError" | "ServiceUnavailable" | "RequestTimeout")
        }
        _ => false,
    };
    let message = match err.as_service_error() {
        Some(e) => format!("{} {}", e.code().unwrap_or("error"), e.message().unwrap_or_default()),
        None => format!("{err}: {}", std::error::Error::source(&err).map(|s| s.to_string()).unwrap_or_default()),
    };
    BlobError::Request { op, key: key.to_string(), message, transient }
}

/// An object as a bucket listing gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedObject {
    pub key: String,
    pub size: u64,
    /// The object's ETag without quotes; changes with its content (some
    /// S3-compatible servers list none).
    pub etag: Option<String>,
    /// When it was last written, as the server lists it (seconds.nanos).
    pub modified: Option<String>,
}

/// A stored object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBlob {
    pub uri: String,
    pub key: String,
    pub sha256: String,
    pub size: u64,
}

#[derive(Debug, Clone)]
pub struct BlobStore {
    client: Client,
    bucket: String,
    /// Shared by every clone (the stages of one process).
    cache: Arc<cache::BlobCache>,
}

impl BlobStore {
    pub fn new(cfg: &BlobConfig) -> Self {
        let creds = Credentials::new(&cfg.access_key, cfg.secret_key.expose_secret(), None, None, "rag-engine-config");
        let conf = aws_sdk_s3::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(cfg.region.clone()))
            .endpoint_url(&cfg.endpoint)
            // Self-hosted servers (MinIO, s3s-fs) address buckets by path.
            .force_path_style(true)
            // Flexible checksums are an AWS extension that not every
            // S3-compatible server implements; SigV4 still signs the body.
            .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
            .response_checksum_validation(ResponseChecksumValidation::WhenRequired)
            .credentials_provider(creds)
            // rustls on ring (the workspace manifest says why).
            .http_client(
                aws_smithy_http_client::Builder::new()
                    .tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::Ring))
                    .build_https(),
            )
            .build();
        BlobStore { client: Client::from_conf(conf), bucket: cfg.bucket.clone(), cache: Arc::new(cache::BlobCache::new(cfg.cache_bytes)) }
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    pub fn uri(&self, key: &str) -> String {
        format!("s3://{}/{}", self.bucket, key)
    }

    /// The key of one of our URIs.
    pub fn key_of<'a>(&self, uri: &'a str) -> Result<&'a str, BlobError> {
        uri.strip_prefix("s3://")
            .and_then(|rest| rest.strip_prefix(self.bucket.as_str()))
            .and_then(|rest| rest.strip_prefix('/'))
            .filter(|k| !k.is_empty())
            .ok_or_else(|| BlobError::BadUri { uri: uri.to_string(), bucket: self.bucket.clone() })
    }

    /// Creates the bucket unless it exists.
    pub async fn ensure_bucket(&self) -> Result<(), BlobError> {
        if self.client.head_bucket().bucket(&self.bucket).send().await.is_ok() {
            return Ok(());
        }
        match self.client.create_bucket().bucket(&self.bucket).send().await {
            Ok(_) => Ok(()),
            Err(e) => {
                let code = e.as_service_error().and_then(|s| s.code()).unwrap_or_default().to_string();
                if code == "BucketAlreadyOwnedByYou" || code == "BucketAlreadyExists" {
                    Ok(())
                } else {
                    Err(request_error("create-bucket", &self.bucket, e))
                }
            }
        }
    }

    /// Whether the storage answers (for readiness checks).
    pub async fn ping(&self) -> Result<(), BlobError> {
        self.client.head_bucket().bucket(&self.bucket).send().await.map(|_| ()).map_err(|e| request_error("head-bucket", &self.bucket, e))
    }

    pub async fn put_bytes(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<StoredBlob, BlobError> {
        let sha256 = hex::encode(Sha256::digest(&bytes));
        let size = bytes.len() as u64;
        let bytes = bytes::Bytes::from(bytes);
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .body(ByteStream::from(bytes.clone()))
            .send()
            .await
            .map_err(|e| request_error("put", key, e))?;
        // Kept once stored, not before: a copy means the object exists.
        self.cache.put(key, &bytes);
        Ok(StoredBlob { uri: self.uri(key), key: key.to_string(), sha256, size })
    }

    /// Stores a file already hashed by the caller; large files go in parts.
    pub async fn put_file(&self, key: &str, path: &Path, size: u64, sha256: &str, content_type: &str) -> Result<StoredBlob, BlobError> {
        let io = |source| BlobError::Io { path: path.display().to_string(), source };
        if size <= MULTIPART_THRESHOLD {
            let bytes = tokio::fs::read(path).await.map_err(io)?;
            let stored = self.put_bytes(key, bytes, content_type).await?;
            return Ok(StoredBlob { sha256: sha256.to_string(), ..stored });
        }
        let upload = self
            .client
            .create_multipart_upload()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .send()
            .await
            .map_err(|e| request_error("create-multipart", key, e))?;
        let upload_id = upload.upload_id().unwrap_or_default().to_string();
        let result = self.upload_parts(key, path, &upload_id).await;
        match result {
            Ok(parts) => {
                self.client
                    .complete_multipart_upload()
                    .bucket(&self.bucket)
                    .key(key)
                    .upload_id(&upload_id)
                    .multipart_upload(CompletedMultipartUpload::builder().set_parts(Some(parts)).build())
                    .send()
                    .await
                    .map_err(|e| request_error("complete-multipart", key, e))?;
                Ok(StoredBlob { uri: self.uri(key), key: key.to_string(), sha256: sha256.to_string(), size })
            }
            Err(e) => {
                // Leave no orphaned parts behind.
                let _ = self.client.abort_multipart_upload().bucket(&self.bucket).key(key).upload_id(&upload_id).send().await;
                Err(e)
            }
        }
    }

    async fn upload_parts(&self, key: &str, path: &Path, upload_id: &str) -> Result<Vec<CompletedPart>, BlobError> {
        let io = |source| BlobError::Io { path: path.display().to_string(), source };
        let mut file = tokio::fs::File::open(path).await.map_err(io)?;
        let mut parts = Vec::new();
        let mut number = 1;
        loop {
            let mut buf = Vec::with_capacity(PART_SIZE);
            let mut taken = (&mut file).take(PART_SIZE as u64);
            taken.read_to_end(&mut buf).await.map_err(io)?;
            if buf.is_empty() {
                break;
            }
            let part = self
                .client
                .upload_part()
                .bucket(&self.bucket)
                .key(key)
                .upload_id(upload_id)
                .part_number(number)
                .body(ByteStream::from(buf))
                .send()
                .await
                .map_err(|e| request_error("upload-part", key, e))?;
            parts.push(CompletedPart::builder().part_number(number).set_e_tag(part.e_tag().map(str::to_string)).build());
            number += 1;
        }
        Ok(parts)
    }

    pub async fn get(&self, key: &str) -> Result<Vec<u8>, BlobError> {
        if let Some(bytes) = self.cache.get(key) {
            return Ok(bytes);
        }
        let out = self.client.get_object().bucket(&self.bucket).key(key).send().await.map_err(|e| request_error("get", key, e))?;
        let bytes = out.body.collect().await.map_err(|e| BlobError::Request {
            op: "get",
            key: key.to_string(),
            message: e.to_string(),
            transient: true,
        })?;
        Ok(bytes.into_bytes().to_vec())
    }

    /// Size of an object, or None when it does not exist.
    pub async fn head(&self, key: &str) -> Result<Option<u64>, BlobError> {
        match self.client.head_object().bucket(&self.bucket).key(key).send().await {
            Ok(out) => Ok(Some(out.content_length().unwrap_or(0).max(0) as u64)),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => Ok(None),
            Err(e) => Err(request_error("head", key, e)),
        }
    }

    /// Keys under `prefix`, every page of the listing.
    pub async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError> {
        let mut keys = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let out = self
                .client
                .list_objects_v2()
                .bucket(&self.bucket)
                .prefix(prefix)
                .set_continuation_token(token.take())
                .send()
                .await
                .map_err(|e| request_error("list", prefix, e))?;
            keys.extend(out.contents().iter().filter_map(|o| o.key().map(str::to_string)));
            match out.next_continuation_token() {
                Some(next) if out.is_truncated().unwrap_or(false) => token = Some(next.to_string()),
                _ => return Ok(keys),
            }
        }
    }

    /// The same server and credentials, another bucket (a bucket a source
    /// follows). Nothing is cached for it.
    pub fn in_bucket(&self, bucket: &str) -> BlobStore {
        BlobStore { client: self.client.clone(), bucket: bucket.to_string(), cache: Arc::new(cache::BlobCache::new(0)) }
    }

    /// One page of the objects under `prefix` (at most 1,000, the S3
    /// page), with their sizes and ETags, and the token of the next page.
    pub async fn list_page(&self, prefix: &str, token: Option<String>) -> Result<(Vec<ListedObject>, Option<String>), BlobError> {
        let out = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(prefix)
            .set_continuation_token(token)
            .send()
            .await
            .map_err(|e| request_error("list", prefix, e))?;
        let objects = out
            .contents()
            .iter()
            .filter_map(|o| {
                Some(ListedObject {
                    key: o.key()?.to_string(),
                    size: o.size().unwrap_or(0).max(0) as u64,
                    etag: o.e_tag().map(|e| e.trim_matches('"').to_string()),
                    modified: o.last_modified().map(|t| format!("{}.{:09}", t.secs(), t.subsec_nanos())),
                })
            })
            .collect();
        let next = match out.next_continuation_token() {
            Some(next) if out.is_truncated().unwrap_or(false) => Some(next.to_string()),
            _ => None,
        };
        Ok((objects, next))
    }

    /// Deletes every object under `prefix`; returns how many. Idempotent.
    pub async fn delete_prefix(&self, prefix: &str) -> Result<usize, BlobError> {
        let keys = self.list(prefix).await?;
        for key in &keys {
            self.delete(key).await?;
        }
        self.cache.remove_prefix(prefix);
        Ok(keys.len())
    }

    pub async fn delete(&self, key: &str) -> Result<(), BlobError> {
        self.cache.remove(key);
        self.client.delete_object().bucket(&self.bucket).key(key).send().await.map_err(|e| request_error("delete", key, e))?;
        Ok(())
    }
}

/// Streaming SHA-256 and size of a file, without reading it into memory.
pub async fn hash_file(path: &Path) -> Result<(String, u64), BlobError> {
    let io = |source| BlobError::Io { path: path.display().to_string(), source };
    let mut file = tokio::fs::File::open(path).await.map_err(io)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1024 * 1024];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf).await.map_err(io)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((hex::encode(hasher.finalize()), size))
}
