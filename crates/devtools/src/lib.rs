//! Development tooling of rag-engine, built into the `rag-dev` binary and
//! never into the product image: benchmarks ([`bench`], docs/performance.md),
//! the chaos harness ([`chaos`], docs/delivery.md), quality evaluations
//! ([`eval`], docs/answers.md) and the in-process ingest harness they share
//! ([`ingest`]). It is the only non-test user of the store's test support.

pub mod bench;
pub mod chaos;
pub mod eval;
pub mod ingest;

use std::path::PathBuf;

/// The product binary the harnesses start as separate processes (`run`,
/// `upload`, `verify`): `RAG_ENGINE_BIN`, else the `rag-engine` built next
/// to this `rag-dev` (any workspace build puts them side by side).
pub fn engine_exe() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("RAG_ENGINE_BIN") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe()?.with_file_name("rag-engine");
    anyhow::ensure!(exe.exists(), "{} is not built: `cargo build --bin rag-engine`, or set RAG_ENGINE_BIN", exe.display());
    Ok(exe)
}
