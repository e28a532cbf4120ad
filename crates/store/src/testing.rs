//! A fresh database per test, as zero-to-production's `tests/api/helpers.rs`
//! does: created on the Postgres of `scripts/stack up` (its `DATABASE_URL`,
//! from the environment or `.local/env`), migrated, and dropped by
//! [`TestDatabase::drop_database`]. For the tests of this crate and of the
//! crates above it, and for the trials of `rag-engine chaos`; the pipeline
//! itself never calls it.

use std::path::Path;

use sqlx::PgPool;

use crate::StoreError;

pub struct TestDatabase {
    pub pool: PgPool,
    /// The new database's URL.
    pub url: String,
    pub name: String,
    admin_url: String,
}

/// The stack's `DATABASE_URL`: the environment's, else `.local/env`'s under `repo_root`.
pub fn stack_database_url(repo_root: &Path) -> Option<String> {
    if let Ok(url) = std::env::var("DATABASE_URL") {
        return Some(url);
    }
    let text = std::fs::read_to_string(repo_root.join(".local/env")).ok()?;
    text.lines().find_map(|l| l.trim().trim_start_matches("export ").strip_prefix("DATABASE_URL=").map(str::to_string))
}

impl TestDatabase {
    /// Creates and migrates a database named `test_<random>` on the server of `base_url`.
    pub async fn create(base_url: &str) -> Result<TestDatabase, StoreError> {
        Self::create_named(base_url, "test").await
    }

    /// Creates and migrates a database named `<prefix>_<random>` (prefix:
    /// lowercase letters, digits and `_`) on the server of `base_url`.
    pub async fn create_named(base_url: &str, prefix: &str) -> Result<TestDatabase, StoreError> {
        if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
            return Err(StoreError::Invalid(format!("database name prefix {prefix:?}")));
        }
        let (server, _) = base_url.rsplit_once('/').ok_or_else(|| StoreError::Invalid("database URL without a database name".into()))?;
        let admin_url = format!("{server}/postgres");
        let name = format!("{prefix}_{}", &uuid::Uuid::new_v4().simple().to_string()[..16]);
        let admin = PgPool::connect(&admin_url).await?;
        sqlx::query(&format!("CREATE DATABASE {name}")).execute(&admin).await?;
        admin.close().await;
        let url = format!("{server}/{name}");
        let pool = PgPool::connect(&url).await?;
        crate::migrate(&pool).await?;
        Ok(TestDatabase { pool, url, name, admin_url })
    }

    /// Closes the pool and drops the database (connections forced out).
    pub async fn drop_database(self) {
        self.pool.close().await;
        if let Ok(admin) = PgPool::connect(&self.admin_url).await {
            let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)).execute(&admin).await;
            admin.close().await;
        }
    }
}
