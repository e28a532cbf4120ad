//! What one upload and one workspace may hold (the `upload` command and the API).

use clap::Args;

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Uploads (environment variable, default)")]
pub struct UploadSettings {
    /// Largest file `upload` accepts, in bytes.
    #[arg(long, env = "UPLOAD_MAX_BYTES", global = true, default_value_t = 100 * 1024 * 1024)]
    pub upload_max_bytes: u64,
    /// Bytes of originals one workspace may hold; an upload past it gets 413 `storage_quota_exceeded`.
    #[arg(long, env = "WORKSPACE_MAX_BYTES", global = true, default_value_t = 10 * 1024 * 1024 * 1024)]
    pub workspace_max_bytes: u64,
}
