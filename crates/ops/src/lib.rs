//! Operator commands of rag-engine, reached as `rag-engine dlq|replay|
//! rebuild|verify|token|keys|workspaces`: they repair and inspect a running deployment
//! (docs/operations.md) and ship in the product image, unlike the
//! development tools of `rag-devtools`.

pub mod dlq;
pub mod keys;
pub mod rebuild;
pub mod replay;
pub mod sources;
pub mod token;
pub mod verify;
pub mod workspaces;
