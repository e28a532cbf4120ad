//! Avro single-object encoding with schemas resolved by fingerprint.

use std::collections::HashMap;
use std::sync::Arc;

use apache_avro::{rabin::Rabin, types::Value, Schema};

use crate::catalog::{EventType, RELEASED};
use crate::types::*;

/// Single-object encoding marker (Avro spec).
pub const MAGIC: [u8; 2] = [0xC3, 0x01];
const HEADER_LEN: usize = 10;

/// Why bytes could not be encoded or decoded; a record that fails so is
/// dead-lettered with the code `rag_bus::FailureCode::from` gives it.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("not Avro single-object encoded (missing C3 01 marker, {0} bytes)")]
    NotSingleObject(usize),
    #[error("unknown schema fingerprint {0}: written by a schema this binary does not know")]
    UnknownFingerprint(String),
    #[error("expected a {expected} event, got {found}")]
    WrongEventType { expected: EventType, found: EventType },
    #[error("invalid schema {stem}: {source}")]
    Schema {
        stem: String,
        #[source]
        source: apache_avro::Error,
    },
    #[error("cannot encode {event}: {source}")]
    Encode {
        event: EventType,
        #[source]
        source: apache_avro::Error,
    },
    #[error("cannot decode {event}: {source}")]
    Decode {
        event: EventType,
        #[source]
        source: apache_avro::Error,
    },
}

/// Finds the schema a datum was written with. The embedded implementation
/// knows every schema compiled into the binary; a Confluent-compatible
/// registry client can implement this later.
pub trait SchemaResolver: Send + Sync {
    fn writer_schema(&self, fingerprint: &[u8; 8]) -> Option<(EventType, Arc<Schema>)>;
}

/// Schemas compiled in from `schemas/`: the current one of each event (used
/// to write and as the reader schema) and every released version (known
/// writers).
#[derive(Debug)]
pub struct EmbeddedSchemas {
    current: HashMap<EventType, (Arc<Schema>, [u8; 8])>,
    writers: HashMap<[u8; 8], (EventType, Arc<Schema>)>,
}

/// The Parsing Canonical Form of the Avro specification. apache-avro's
/// `canonical_form` keeps a primitive that carried a logical type as
/// `{"type":"string"}`, where the specification (and fastavro, the Java
/// library, Confluent's tools) reduce it to `"string"`; its fingerprints
/// therefore differ from every other implementation's for schemas with
/// logical types. In canonical form such an object can only be a schema
/// (docs, defaults and names with braces are gone), so the reduction is a
/// plain replacement.
pub fn parsing_canonical_form(schema: &Schema) -> String {
    let mut form = schema.canonical_form();
    for primitive in ["null", "boolean", "int", "long", "float", "double", "bytes", "string"] {
        form = form.replace(&format!("{{\"type\":\"{primitive}\"}}"), &format!("\"{primitive}\""));
    }
    form
}

/// The CRC-64-AVRO (Rabin) fingerprint of the schema's Parsing Canonical
/// Form, little-endian, as single-object encoding writes it: what any
/// standard Avro library computes, so upstream producers interoperate.
pub fn fingerprint(schema: &Schema) -> [u8; 8] {
    use digest::Digest;
    let mut out = [0u8; 8];
    out.copy_from_slice(&Rabin::digest(parsing_canonical_form(schema).as_bytes())[..8]);
    out
}

/// The fingerprint rag-engine wrote before it followed the specification
/// (apache-avro's own canonical form); still accepted when reading.
pub fn legacy_fingerprint(schema: &Schema) -> [u8; 8] {
    let fp = schema.fingerprint::<Rabin>();
    let mut out = [0u8; 8];
    out.copy_from_slice(&fp.bytes[..8]);
    out
}

impl EmbeddedSchemas {
    pub fn load() -> Result<Self, CodecError> {
        let mut current = HashMap::new();
        let mut writers = HashMap::new();
        for event in EventType::ALL {
            let stem = event.schema_stem();
            let schema =
                Schema::parse_str(event.current_schema_text()).map_err(|source| CodecError::Schema { stem: stem.to_string(), source })?;
            let (fp, legacy) = (fingerprint(&schema), legacy_fingerprint(&schema));
            let schema = Arc::new(schema);
            writers.insert(fp, (event, schema.clone()));
            writers.insert(legacy, (event, schema.clone()));
            current.insert(event, (schema, fp));
        }
        for released in RELEASED {
            let Some(event) = EventType::ALL.into_iter().find(|e| e.schema_stem() == released.event) else {
                continue;
            };
            let schema = Schema::parse_str(released.text)
                .map_err(|source| CodecError::Schema { stem: format!("released/{}/v{}", released.event, released.version), source })?;
            let schema = Arc::new(schema);
            writers.entry(fingerprint(&schema)).or_insert((event, schema.clone()));
            writers.entry(legacy_fingerprint(&schema)).or_insert((event, schema));
        }
        Ok(EmbeddedSchemas { current, writers })
    }

    pub fn current(&self, event: EventType) -> (&Arc<Schema>, [u8; 8]) {
        let (schema, fp) = &self.current[&event];
        (schema, *fp)
    }
}

impl SchemaResolver for EmbeddedSchemas {
    fn writer_schema(&self, fingerprint: &[u8; 8]) -> Option<(EventType, Arc<Schema>)> {
        self.writers.get(fingerprint).cloned()
    }
}

/// Any event of the catalog, decoded. Serializes as the event's own fields
/// (tools print it as JSON).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum AnyEvent {
    DocumentUploaded(DocumentUploaded),
    DocumentParsed(DocumentParsed),
    DocumentChunked(DocumentChunked),
    DocumentIngested(DocumentIngested),
    QuestionAsked(QuestionAsked),
    AnswerProduced(AnswerProduced),
    DocumentDeleted(DocumentDeleted),
}

impl AnyEvent {
    pub fn envelope(&self) -> &Envelope {
        match self {
            AnyEvent::DocumentUploaded(e) => &e.envelope,
            AnyEvent::DocumentParsed(e) => &e.envelope,
            AnyEvent::DocumentChunked(e) => &e.envelope,
            AnyEvent::DocumentIngested(e) => &e.envelope,
            AnyEvent::QuestionAsked(e) => &e.envelope,
            AnyEvent::AnswerProduced(e) => &e.envelope,
            AnyEvent::DocumentDeleted(e) => &e.envelope,
        }
    }

    pub fn event_type(&self) -> EventType {
        match self {
            AnyEvent::DocumentUploaded(_) => EventType::DocumentUploaded,
            AnyEvent::DocumentParsed(_) => EventType::DocumentParsed,
            AnyEvent::DocumentChunked(_) => EventType::DocumentChunked,
            AnyEvent::DocumentIngested(_) => EventType::DocumentIngested,
            AnyEvent::QuestionAsked(_) => EventType::QuestionAsked,
            AnyEvent::AnswerProduced(_) => EventType::AnswerProduced,
            AnyEvent::DocumentDeleted(_) => EventType::DocumentDeleted,
        }
    }
}

/// Encoder/decoder for the catalog.
#[derive(Clone)]
pub struct Codec {
    schemas: Arc<EmbeddedSchemas>,
    resolver: Arc<dyn SchemaResolver>,
}

impl std::fmt::Debug for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Codec").finish_non_exhaustive()
    }
}

impl Codec {
    /// A codec that resolves writers against the embedded schemas only.
    pub fn embedded() -> Result<Self, CodecError> {
        let schemas = Arc::new(EmbeddedSchemas::load()?);
        Ok(Codec { resolver: schemas.clone(), schemas })
    }

    /// A codec with another writer-schema resolver (e.g. a registry).
    pub fn with_resolver(resolver: Arc<dyn SchemaResolver>) -> Result<Self, CodecError> {
        Ok(Codec { schemas: Arc::new(EmbeddedSchemas::load()?), resolver })
    }

    /// Fingerprint of the current schema of an event, as written in headers.
    pub fn fingerprint_hex(&self, event: EventType) -> String {
        to_hex(&self.schemas.current(event).1)
    }

    pub fn encode<E: Event>(&self, event: &E) -> Result<Vec<u8>, CodecError> {
        let err = |source| CodecError::Encode { event: E::TYPE, source };
        let (schema, fp) = self.schemas.current(E::TYPE);
        let value = apache_avro::to_value(event).map_err(err)?;
        // Resolution turns serde's plain longs/strings into the schema's
        // logical types (timestamp-millis, uuid) and unions.
        let value = value.resolve(schema).map_err(err)?;
        let datum = apache_avro::to_avro_datum(schema, value).map_err(err)?;
        let mut out = Vec::with_capacity(HEADER_LEN + datum.len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&fp);
        out.extend_from_slice(&datum);
        Ok(out)
    }

    /// Reads the header and returns the event type and writer schema.
    pub fn peek(&self, bytes: &[u8]) -> Result<(EventType, Arc<Schema>), CodecError> {
        if bytes.len() < HEADER_LEN || bytes[..2] != MAGIC {
            return Err(CodecError::NotSingleObject(bytes.len()));
        }
        let mut fp = [0u8; 8];
        fp.copy_from_slice(&bytes[2..HEADER_LEN]);
        self.resolver.writer_schema(&fp).ok_or_else(|| CodecError::UnknownFingerprint(to_hex(&fp)))
    }

    fn decode_value(&self, bytes: &[u8]) -> Result<(EventType, Value), CodecError> {
        let (event, writer) = self.peek(bytes)?;
        let (reader, _) = self.schemas.current(event);
        let mut datum = &bytes[HEADER_LEN..];
        let value =
            apache_avro::from_avro_datum(&writer, &mut datum, Some(reader)).map_err(|source| CodecError::Decode { event, source })?;
        if !datum.is_empty() {
            return Err(CodecError::Decode {
                event,
                source: apache_avro::Error::new(apache_avro::error::Details::ReadBytes(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{} trailing bytes after the datum", datum.len()),
                ))),
            });
        }
        Ok((event, value))
    }

    pub fn decode<E: Event>(&self, bytes: &[u8]) -> Result<E, CodecError> {
        let (event, value) = self.decode_value(bytes)?;
        if event != E::TYPE {
            return Err(CodecError::WrongEventType { expected: E::TYPE, found: event });
        }
        apache_avro::from_value::<E>(&value).map_err(|source| CodecError::Decode { event, source })
    }

    pub fn decode_any(&self, bytes: &[u8]) -> Result<AnyEvent, CodecError> {
        let (event, value) = self.decode_value(bytes)?;
        let err = |source| CodecError::Decode { event, source };
        Ok(match event {
            EventType::DocumentUploaded => AnyEvent::DocumentUploaded(apache_avro::from_value(&value).map_err(err)?),
            EventType::DocumentParsed => AnyEvent::DocumentParsed(apache_avro::from_value(&value).map_err(err)?),
            EventType::DocumentChunked => AnyEvent::DocumentChunked(apache_avro::from_value(&value).map_err(err)?),
            EventType::DocumentIngested => AnyEvent::DocumentIngested(apache_avro::from_value(&value).map_err(err)?),
            EventType::QuestionAsked => AnyEvent::QuestionAsked(apache_avro::from_value(&value).map_err(err)?),
            EventType::AnswerProduced => AnyEvent::AnswerProduced(apache_avro::from_value(&value).map_err(err)?),
            EventType::DocumentDeleted => AnyEvent::DocumentDeleted(apache_avro::from_value(&value).map_err(err)?),
        })
    }
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
