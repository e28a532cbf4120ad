//! A fresh database per test, as zero-to-production's `tests/api/helpers.rs`
//! does: created on the Postgres of `scripts/stack up` (its `DATABASE_URL`,
//! from the environment or `.local/env`), migrated, and dropped by
//! [`TestDatabase::drop_database`]. For the tests of this crate and of the
//! crates above it, and for the trials of `rag-dev chaos`; the pipeline
//! itself never calls it.
//!
//! Also the reads the integration tests make across a test database that
//! the product does not need ([`all_documents`], [`all_messages`],
//! [`all_chunks`], [`traces`], ...), so the tests stay off the table layout.

use std::path::Path;

use sqlx::PgPool;

use uuid::Uuid;

use crate::documents::{DocumentRow, DocumentStatus};
use crate::messages::MessageRow;
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

// Reads the integration tests make across a test database (every
// workspace, deleted documents included) that the product never needs.
// They keep the tests off the table layout: a migration changes them here.

/// Every document of the database, any workspace, deleted ones included, by id.
pub async fn all_documents(pool: &PgPool) -> Result<Vec<DocumentRow>, StoreError> {
    Ok(sqlx::query_as(&format!("SELECT {} FROM documents ORDER BY id", crate::documents::COLUMNS)).fetch_all(pool).await?)
}

/// Every message of the database, any workspace, oldest first.
pub async fn all_messages(pool: &PgPool) -> Result<Vec<MessageRow>, StoreError> {
    Ok(sqlx::query_as(&format!("SELECT {} FROM messages ORDER BY created_at, id", crate::messages::COLUMNS)).fetch_all(pool).await?)
}

/// The embedding a document was indexed with.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DocumentEmbedding {
    pub id: Uuid,
    #[sqlx(try_from = "String")]
    pub status: DocumentStatus,
    pub embedding_model: Option<String>,
    pub embedding_dimension: Option<i32>,
}

/// Every document's embedding model and dimension, by id.
pub async fn document_embeddings(pool: &PgPool) -> Result<Vec<DocumentEmbedding>, StoreError> {
    Ok(sqlx::query_as("SELECT id, status, embedding_model, embedding_dimension FROM documents ORDER BY id").fetch_all(pool).await?)
}

/// A chunk of the search index as stored, whatever its version or document.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct StoredChunk {
    pub chunk_id: String,
    pub document_id: Uuid,
    pub chunking_version: String,
    pub content: String,
    pub term_count: i32,
    pub terms: Vec<String>,
    pub tfs: Vec<i32>,
    pub embedding_model: Option<String>,
    pub embedding_dimension: Option<i32>,
    pub embedding: Option<Vec<f32>>,
}

/// Every chunk of the search index, any workspace, version or document status, by chunk id.
pub async fn all_chunks(pool: &PgPool) -> Result<Vec<StoredChunk>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT chunk_id, document_id, chunking_version, content, term_count, terms, tfs, embedding_model, embedding_dimension,
                embedding::real[] AS embedding
         FROM search_chunks ORDER BY chunk_id",
    )
    .fetch_all(pool)
    .await?)
}

/// Where a document's full text is stored (`documents.full_text_uri`), if it has a row and one.
pub async fn full_text_uri(pool: &PgPool, document_id: Uuid) -> Result<Option<String>, StoreError> {
    let uri: Option<Option<String>> =
        sqlx::query_scalar("SELECT full_text_uri FROM documents WHERE id = $1").bind(document_id).fetch_optional(pool).await?;
    Ok(uri.flatten())
}

/// The chunking versions the chunk mappings of the database hold, sorted.
pub async fn mapped_chunking_versions(pool: &PgPool) -> Result<Vec<String>, StoreError> {
    Ok(sqlx::query_scalar("SELECT DISTINCT chunking_version FROM chunk_mappings ORDER BY 1").fetch_all(pool).await?)
}

/// The rows of the derived tables, a document's or all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Traces {
    pub search_chunks: i64,
    /// Postings (terms) of its search chunks.
    pub terms: i64,
    pub chunk_mappings: i64,
    pub segments: i64,
}

/// The rows a document (None: every document, whatever its workspace)
/// has in the search chunks, chunk mappings and segments.
pub async fn traces(pool: &PgPool, document_id: Option<Uuid>) -> Result<Traces, StoreError> {
    let (search_chunks, terms, chunk_mappings, segments): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM search_chunks WHERE $1::uuid IS NULL OR document_id = $1),
                (SELECT coalesce(sum(cardinality(terms)), 0)::int8 FROM search_chunks WHERE $1::uuid IS NULL OR document_id = $1),
                (SELECT count(*) FROM chunk_mappings WHERE $1::uuid IS NULL OR document_id = $1),
                (SELECT count(*) FROM segments WHERE $1::uuid IS NULL OR document_id = $1)",
    )
    .bind(document_id)
    .fetch_one(pool)
    .await?;
    Ok(Traces { search_chunks, terms, chunk_mappings, segments })
}
