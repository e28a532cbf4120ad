//! The `rag-engine` binary's library: the configuration ([`config`]), the
//! stages started as tasks ([`run`]) and every command. The binary
//! (`main.rs`) only parses the command line; the integration tests
//! (`tests/it/`) start the same stages and API in-process from here.

pub mod ask;
pub mod bench;
pub mod chaos;
pub mod config;
pub mod dlq;
pub mod docs;
pub mod eval;
pub mod ingest;
pub mod page_png;
pub mod rebuild;
pub mod replay;
pub mod run;
pub mod search;
pub mod setup;
pub mod token;
pub mod upload;
pub mod verify;
