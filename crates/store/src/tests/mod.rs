//! Tests of the store against the real Postgres of `scripts/stack up`, each
//! in a fresh database ([`crate::testing::TestDatabase`]).

mod documents;
mod offsets;
mod pool;

use std::path::Path;

use crate::testing::{stack_database_url, TestDatabase};

pub(crate) async fn fresh() -> TestDatabase {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let url = stack_database_url(&root).expect("the local stack is not configured: run `scripts/stack up` first");
    TestDatabase::create(&url).await.expect("a fresh test database")
}
