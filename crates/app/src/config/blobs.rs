//! The S3-compatible store of originals and claim-checked payloads.

use clap::Args;
use rag_blobs::BlobConfig;
use secrecy::SecretString;

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Object storage (environment variable, default)")]
pub struct BlobSettings {
    /// S3-compatible endpoint for originals and claim-checked payloads.
    #[arg(long, env = "S3_ENDPOINT", global = true, default_value = "http://127.0.0.1:19000")]
    pub s3_endpoint: String,
    /// S3 region (any value for self-hosted servers).
    #[arg(long, env = "S3_REGION", global = true, default_value = "us-east-1")]
    pub s3_region: String,
    /// Bucket for every object rag-engine stores.
    #[arg(long, env = "S3_BUCKET", global = true, default_value = "rag-engine")]
    pub s3_bucket: String,
    /// S3 access key.
    #[arg(long, env = "S3_ACCESS_KEY", global = true, default_value = "rag-engine")]
    pub s3_access_key: String,
    /// S3 secret key.
    #[arg(long, env = "S3_SECRET_KEY", global = true, default_value = "rag-engine-secret", hide_env_values = true)]
    pub s3_secret_key: SecretString,
    /// MiB of objects this process wrote kept for its own reads (a stage reading what another stage of the same process just stored: 4 of 9 object-storage calls per document under `run all`). Content-addressed, so never stale; 0: off.
    #[arg(long, env = "BLOB_CACHE_MB", global = true, default_value_t = 64)]
    pub blob_cache_mb: usize,
}

impl BlobSettings {
    pub fn blobs(&self) -> BlobConfig {
        BlobConfig {
            endpoint: self.s3_endpoint.clone(),
            region: self.s3_region.clone(),
            bucket: self.s3_bucket.clone(),
            access_key: self.s3_access_key.clone(),
            secret_key: self.s3_secret_key.clone(),
            cache_bytes: self.blob_cache_mb.saturating_mul(1024 * 1024),
        }
    }
}
