//! Tests of the crate against its public surface (and, where marked, the
//! real local stack); compiled into its unit-test binary, not a binary of
//! their own.

mod citations;
mod llm;
mod llm_server;
mod opening;
