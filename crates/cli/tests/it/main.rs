//! The one integration test binary: every test of the `rag-engine` crate
//! against the real local stack (`scripts/stack up`). One binary links the
//! workspace once instead of once per file.
//!
//! - [`common`]: a fresh database and topic prefix per test ([`common::TestEnv`]),
//!   running CLI commands, and subprocesses where a process must die.
//! - [`app`]: [`app::TestApp`], the real stages and API in-process.
//! - [`api_client`]: the typed HTTP client.
//! - [`api`], [`api_access`]: the HTTP API (the flow and streams; the access rules).

// Test code through and through (helpers included, which clippy's
// allow-unwrap-in-tests does not see as tests): a panic is the report.
#![allow(clippy::unwrap_used)]

mod answer_note;
mod answers;
mod api;
mod api_access;
mod api_client;
mod api_keys;
mod app;
mod broker_restart;
mod common;
mod compose;
mod delivery;
mod embeddings;
mod eval;
mod formats;
mod foundation;
mod hostile;
mod images;
mod injection;
mod limits;
mod mcp;
mod object_storage;
mod observability;
mod openai_chat;
mod openai_stream;
mod operations;
mod pipeline;
mod reading;
mod rebuild;
mod retrieval;
mod revisions;
mod slides;
mod sources;
mod streaming;
mod upstream;
mod workspaces;
