//! The bearer tokens of the HTTP API (`token` mints them, the API checks them).

use std::time::Duration;

use clap::Args;
use secrecy::{ExposeSecret, SecretString};

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Tokens (environment variable, default)")]
pub struct JwtSettings {
    /// HS256 secret of the API's bearer tokens (Supabase: the project's JWT secret); at least 32 bytes. Required by `run api`/`run all` and `token`.
    #[arg(long, env = "JWT_SECRET", global = true, hide_env_values = true)]
    pub jwt_secret: Option<SecretString>,
    /// Audience (`aud`) a token must carry; empty: not checked.
    #[arg(long, env = "JWT_AUDIENCE", global = true, default_value = "authenticated")]
    pub jwt_audience: String,
    /// Longest lifetime of a bearer token the API accepts, in seconds (`exp` - `iat`, and `exp` - now); longer-lived tokens are refused.
    #[arg(long, env = "JWT_MAX_TTL_SECS", global = true, default_value_t = 7 * 24 * 3600)]
    pub jwt_max_ttl_secs: u64,
}

impl JwtSettings {
    pub fn jwt(&self) -> anyhow::Result<rag_api::JwtAuth> {
        let Some(secret) = self.jwt_secret.as_ref().filter(|s| !s.expose_secret().is_empty()) else {
            anyhow::bail!("JWT_SECRET is not set: the API needs the HS256 secret of its bearer tokens (at least 32 bytes; scripts/stack writes one to .local/env)");
        };
        let auth = rag_api::JwtAuth::new(secret.expose_secret(), Some(&self.jwt_audience))?;
        Ok(auth.with_max_ttl(Duration::from_secs(self.jwt_max_ttl_secs.max(1))))
    }
}
