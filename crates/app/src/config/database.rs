//! The read models' database.

use std::time::Duration;

use clap::Args;
use rag_store::StoreConfig;
use secrecy::SecretString;

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Postgres (environment variable, default)")]
pub struct DatabaseSettings {
    /// Postgres (with pgvector) holding the read models.
    #[arg(long, env = "DATABASE_URL", global = true, default_value = "postgres://rag@127.0.0.1:15432/rag")]
    pub database_url: SecretString,
    /// Connection pool size per process.
    #[arg(long, env = "DATABASE_MAX_CONNECTIONS", global = true, default_value_t = 10)]
    pub database_max_connections: u32,
    /// A pooled Postgres connection idle at least this long (ms) is checked with a round trip before use; a busier one is used as it is (sqlx checks every one: a round trip per statement). A connection that died with the server meanwhile fails one statement, which the stages retry.
    #[arg(long, env = "DATABASE_PING_IF_IDLE_MS", global = true, default_value_t = 1000)]
    pub database_ping_if_idle_ms: u64,
}

impl DatabaseSettings {
    pub fn store(&self) -> StoreConfig {
        StoreConfig {
            database_url: self.database_url.clone(),
            max_connections: self.database_max_connections,
            connect_timeout: Duration::from_secs(10),
            ping_if_idle_for: Duration::from_millis(self.database_ping_if_idle_ms),
        }
    }
}
