//! The composition root of rag-engine: the typed configuration read from
//! environment variables ([`config`]) and the stages and HTTP API started
//! from it as tasks ([`run`]). The product binary (`rag-engine`), the
//! operator commands (`rag-ops`), the development tools (`rag-devtools`)
//! and the in-process integration tests all start the pipeline from here,
//! so there is one way to build it.

pub mod config;
pub mod run;
pub mod search;
