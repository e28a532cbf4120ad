//! Tests of the crate against its public surface (and, where marked, the
//! real local stack); compiled into its unit-test binary.

mod rerank;
mod search_index;
