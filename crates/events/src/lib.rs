//! The event catalog of rag-engine.
//!
//! Every event is an Avro record defined in `schemas/` (the single source of
//! truth), carried on its own topic and encoded with Avro single-object
//! encoding (`C3 01` + 8-byte CRC-64-AVRO fingerprint + datum). Readers
//! resolve the fingerprint against the schemas compiled into the binary, so
//! no registry is needed; [`codec::SchemaResolver`] lets one be plugged in.

pub mod catalog;
pub mod codec;
pub mod types;

pub use catalog::{EventType, Topics};
pub use codec::{AnyEvent, Codec, CodecError, EmbeddedSchemas, SchemaResolver};
pub use types::*;

/// Workspace ids are `[A-Za-z0-9][A-Za-z0-9._-]{0,63}` everywhere: in
/// events, topics keys, object keys, the API and the CLI. Anything else
/// cannot exist.
pub fn is_workspace_id(ws: &str) -> bool {
    !ws.is_empty()
        && ws.len() <= 64
        && ws.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && ws.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod workspace_id_tests {
    #[test]
    fn workspace_ids_are_short_safe_names() {
        for ok in ["a", "ws-1", "Acme_2026.q4", &"x".repeat(64)] {
            assert!(super::is_workspace_id(ok), "{ok}");
        }
        for bad in ["", "-ws", ".hidden", "a/b", "a b", "ví-dụ", &"x".repeat(65)] {
            assert!(!super::is_workspace_id(bad), "{bad}");
        }
    }
}

#[cfg(test)]
mod tests;
