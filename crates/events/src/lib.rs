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
