//! The HTTP API and the page: address, limits, timeouts.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

use super::UploadSettings;

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "HTTP API (environment variable, default)")]
pub struct ApiSettings {
    /// Workspaces one user may own (each has WORKSPACE_MAX_BYTES); creating one more gets 409 `too_many_workspaces`.
    #[arg(long, env = "API_WORKSPACES_PER_USER", global = true, default_value_t = 50)]
    pub api_workspaces_per_user: u64,
    /// Address the HTTP API listens on (`run api`, `run all`).
    #[arg(long, env = "API_ADDR", global = true, default_value = "127.0.0.1:8080")]
    pub api_addr: SocketAddr,
    /// Origins allowed to call the API from a browser, comma-separated; `*` for any; empty: no CORS.
    #[arg(long, env = "CORS_ALLOWED_ORIGINS", global = true, default_value = "")]
    pub cors_allowed_origins: String,
    /// Largest JSON request body of the API, in bytes (uploads are bounded by UPLOAD_MAX_BYTES).
    #[arg(long, env = "API_JSON_BODY_MAX_BYTES", global = true, default_value_t = 64 * 1024)]
    pub api_json_body_max_bytes: usize,
    /// Seconds the API waits for the broker to confirm an event before answering 503.
    #[arg(long, env = "API_PRODUCE_TIMEOUT_SECS", global = true, default_value_t = 15)]
    pub api_produce_timeout_secs: u64,
    /// Sustained API requests per second of one user (or address, before sign-in); over it: 429 with Retry-After.
    #[arg(long, env = "API_RATE_PER_SEC", global = true, default_value_t = 20)]
    pub api_rate_per_sec: u32,
    /// API requests one user may send at once above API_RATE_PER_SEC.
    #[arg(long, env = "API_RATE_BURST", global = true, default_value_t = 100)]
    pub api_rate_burst: u32,
    /// Questions one user may ask per minute (each can cost an LLM call); over it: 429.
    #[arg(long, env = "API_QUESTIONS_PER_MINUTE", global = true, default_value_t = 20)]
    pub api_questions_per_minute: u32,
    /// Event streams one user may hold open at once; over it: 429.
    #[arg(long, env = "API_STREAMS_PER_USER", global = true, default_value_t = 8)]
    pub api_streams_per_user: usize,
    /// Uploads of one user being received at once; over it: 429.
    #[arg(long, env = "API_UPLOADS_PER_USER", global = true, default_value_t = 4)]
    pub api_uploads_per_user: usize,
    /// Seconds to receive a request's headers, and the most a kept-alive connection may sit idle between requests, before it is closed.
    #[arg(long, env = "API_HEADER_TIMEOUT_SECS", global = true, default_value_t = 30)]
    pub api_header_timeout_secs: u64,
    /// Seconds to receive a request's body (an upload included).
    #[arg(long, env = "API_BODY_TIMEOUT_SECS", global = true, default_value_t = 300)]
    pub api_body_timeout_secs: u64,
    /// Milliseconds between reads of an answer being waited for (the page's event stream, chat completions, MCP `ask`), in case the projector's note that it is projected was missed; with the note an answer is read as soon as it is projected.
    #[arg(long, env = "API_ANSWER_POLL_MS", global = true, default_value_t = 250)]
    pub api_answer_poll_ms: u64,
    /// Development sign-in: `POST /dev/sign-in` (and the page's sign-in form) mints a token for any user name without a password. Only on a developer's machine (`scripts/demo` turns it on); never in production.
    #[arg(long, env = "API_DEV_SIGN_IN", global = true, default_value_t = false, action = clap::ArgAction::Set)]
    pub api_dev_sign_in: bool,
}

impl ApiSettings {
    pub fn api(&self, uploads: &UploadSettings) -> rag_api::ApiConfig {
        rag_api::ApiConfig {
            cors_origins: self.cors_allowed_origins.split(',').map(str::trim).filter(|o| !o.is_empty()).map(String::from).collect(),
            upload_max_bytes: uploads.upload_max_bytes,
            workspace_max_bytes: uploads.workspace_max_bytes,
            workspaces_per_user: self.api_workspaces_per_user,
            json_body_max_bytes: self.api_json_body_max_bytes,
            dev_sign_in: self.api_dev_sign_in,
            limits: rag_api::limits::LimitsConfig {
                requests_per_sec: self.api_rate_per_sec,
                request_burst: self.api_rate_burst,
                questions_per_minute: self.api_questions_per_minute,
                streams_per_user: self.api_streams_per_user,
                uploads_per_user: self.api_uploads_per_user,
            },
            header_timeout: Duration::from_secs(self.api_header_timeout_secs.max(1)),
            body_timeout: Duration::from_secs(self.api_body_timeout_secs.max(1)),
            sse_poll: Duration::from_millis(self.api_answer_poll_ms.max(10)),
            ..rag_api::ApiConfig::default()
        }
    }
}
