//! The pool of [`crate::connect`]: a connection the server ended costs at
//! most one statement and is not handed out again; one idle long enough is
//! checked first and costs none.

use std::time::Duration;

use sqlx::PgPool;

use crate::{connect, StoreConfig};

async fn one_connection_pool(url: &str, ping_if_idle_for: Duration) -> PgPool {
    let cfg = StoreConfig {
        database_url: url.to_string().into(),
        max_connections: 1,
        connect_timeout: Duration::from_secs(10),
        ping_if_idle_for,
    };
    connect(&cfg).await.expect("pool")
}

/// Ends the backend of the pool's only connection from another session, as
/// a server restart would, and waits until it is gone.
async fn end_the_pooled_backend(pool: &PgPool, admin: &PgPool) -> i32 {
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()").fetch_one(pool).await.unwrap();
    // sqlx checks a connection in the background on its way back: wait
    // until that is done and the connection is idle in the pool.
    let mut waited = 0;
    while pool.num_idle() < 1 {
        waited += 1;
        assert!(waited < 10_000, "the connection never came back to the pool");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let ended: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1, 10000)").bind(pid).fetch_one(admin).await.unwrap();
    assert!(ended, "backend {pid} was not ended");
    pid
}

#[tokio::test]
async fn a_connection_the_server_ended_fails_one_statement_and_is_replaced() {
    let db = super::fresh().await;
    // Never checked before use: the ended connection is handed out once.
    let pool = one_connection_pool(&db.url, Duration::from_secs(3600)).await;
    let ended = end_the_pooled_backend(&pool, &db.pool).await;

    let first = sqlx::query_scalar::<_, i32>("SELECT pg_backend_pid()").fetch_one(&pool).await;
    assert!(first.is_err(), "the ended connection was used without an error: {first:?}");
    // The failed connection was closed on its way back, not pooled again.
    let next: i32 = sqlx::query_scalar("SELECT pg_backend_pid()").fetch_one(&pool).await.unwrap();
    assert_ne!(next, ended, "the ended backend was handed out again");
    let again: i32 = sqlx::query_scalar("SELECT pg_backend_pid()").fetch_one(&pool).await.unwrap();
    assert_eq!(again, next, "a healthy connection is reused");
    pool.close().await;
    db.drop_database().await;
}

#[tokio::test]
async fn a_connection_idle_long_enough_is_checked_and_replaced_before_use() {
    let db = super::fresh().await;
    // Always checked before use (idle for at least zero).
    let pool = one_connection_pool(&db.url, Duration::ZERO).await;
    let ended = end_the_pooled_backend(&pool, &db.pool).await;

    let next: i32 = sqlx::query_scalar("SELECT pg_backend_pid()").fetch_one(&pool).await.unwrap();
    assert_ne!(next, ended, "the ended backend was handed out");
    pool.close().await;
    db.drop_database().await;
}
