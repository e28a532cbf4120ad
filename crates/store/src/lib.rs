//! Postgres read models of rag-engine.
//!
//! Read-model rows are written by projections (Kafka -> Postgres stages)
//! inside a transaction that also advances the stage's stored offset, see
//! [`offsets`]. The API applies the events it produces through the same
//! idempotent functions right after the broker confirms them, so a client
//! reads its own writes; the projection later finds them already applied.
//! [`workspaces`] is the one source table (ownership has no event).

pub mod api_keys;
pub mod audit;
pub mod documents;
pub mod messages;
pub mod offsets;
pub mod operations;
pub mod parse_attempts;
pub mod pipeline;
pub mod raw;
pub mod revisions;
pub mod search;
pub mod sources;
pub mod status;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;
mod transitions;
pub mod workspaces;

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

pub use sqlx;

/// Migrations embedded from `migrations/` at build time.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("invalid value: {0}")]
    Invalid(String),
}

impl StoreError {
    /// Whether retrying later may succeed (connection trouble, deadlock,
    /// serialization failure) as opposed to a defect in the data.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Database(e) => match e {
                sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Tls(_) => true,
                sqlx::Error::Database(db) => {
                    // 40001 serialization_failure, 40P01 deadlock_detected,
                    // 57P01 admin_shutdown, 53300 too_many_connections, 08*: connection exceptions.
                    let code = db.code().unwrap_or_default();
                    matches!(code.as_ref(), "40001" | "40P01" | "57P01" | "57P02" | "57P03" | "53300") || code.starts_with("08")
                }
                _ => false,
            },
            StoreError::Migrate(_) | StoreError::Invalid(_) => false,
        }
    }
}

#[derive(Debug, Clone)]
pub struct StoreConfig {
    pub database_url: secrecy::SecretString,
    pub max_connections: u32,
    pub connect_timeout: Duration,
    /// A pooled connection idle at least this long is checked with a round
    /// trip before it is handed out; one idle for less is handed out as it
    /// is (see [`connect`]).
    pub ping_if_idle_for: Duration,
}

pub async fn connect(cfg: &StoreConfig) -> Result<PgPool, StoreError> {
    let options: PgConnectOptions = secrecy::ExposeSecret::expose_secret(&cfg.database_url)
        .parse()
        .map_err(|e: sqlx::Error| StoreError::Invalid(format!("DATABASE_URL: {e}")))?;
    let ping_if_idle_for = cfg.ping_if_idle_for;
    let pool = PgPoolOptions::new()
        .max_connections(cfg.max_connections)
        .acquire_timeout(cfg.connect_timeout)
        // sqlx's default checks every idle connection with a round trip
        // before handing it out, so each statement waited for two (it
        // checks once more in the background when the connection comes
        // back, which cannot be turned off). A connection idle for less
        // than `ping_if_idle_for` is handed out as it is; one that died
        // with the server meanwhile fails its statement (the stages retry
        // it) and that background check closes it instead of pooling it
        // again (tests/pool.rs).
        .test_before_acquire(false)
        .before_acquire(move |conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= ping_if_idle_for {
                    sqlx::Connection::ping(conn).await?;
                }
                Ok(true)
            })
        })
        .connect_with(options)
        .await?;
    Ok(pool)
}

/// One round trip to the database, for readiness checks.
pub async fn ping(pool: &PgPool) -> Result<(), StoreError> {
    sqlx::query("SELECT 1").execute(pool).await?;
    Ok(())
}

pub async fn migrate(pool: &PgPool) -> Result<(), StoreError> {
    MIGRATOR.run(pool).await?;
    Ok(())
}

#[cfg(test)]
mod tests;

/// SQL: `rag_model::index_version` of a chunking version and a revision
/// (SQL expressions), the key a revision's chunks are stored under.
pub(crate) fn index_version_sql(chunking_version: &str, revision: &str) -> String {
    format!("({chunking_version} || CASE WHEN coalesce({revision}, 1) > 1 THEN ':r' || {revision} ELSE '' END)")
}

/// SQL: the revision an index version names (`rag_model::split_index_version`).
pub(crate) fn revision_of_index_version_sql(key: &str) -> String {
    format!("(CASE WHEN {key} ~ ':r[0-9]+$' THEN substring({key} from ':r([0-9]+)$')::int ELSE 1 END)")
}
