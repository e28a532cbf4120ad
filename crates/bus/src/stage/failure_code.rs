//! [`FailureCode`]: why a record was dead-lettered, one variant per reason.
//!
//! The code travels as a string: the `dlq-reason-code` header of the dead
//! letter, the `reason` label of `rag_stage_dead_letters_total`, and the
//! `failure_code` of a document marked failed. [`FailureCode::as_str`] is
//! that string and must never change for an existing variant (operators,
//! dashboards and stored rows know it); a new reason is a new variant.

use rag_events::CodecError;

/// Declares the codes once: the variant, its wire string and what it means.
/// [`FailureCode::ALL`] and [`FailureCode::as_str`] are generated from the
/// same list, so neither can miss a variant.
macro_rules! failure_codes {
    ($($(#[doc = $doc:literal])+ $variant:ident => $wire:literal,)+) => {
        /// Why a record was dead-lettered (see the module documentation).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum FailureCode {
            $($(#[doc = $doc])+ $variant,)+
        }

        impl FailureCode {
            /// Every code, in the order they are declared.
            pub const ALL: &'static [FailureCode] = &[$(FailureCode::$variant,)+];

            /// The code on the wire (headers, metric labels, stored rows).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(FailureCode::$variant => $wire,)+
                }
            }
        }
    };
}

failure_codes! {
    // The input is unusable.
    /// The event's fields cannot be used (a malformed id, a missing URI), or
    /// the store refused the rows it makes.
    InvalidEvent => "invalid_event",
    /// The event is on a topic it does not belong on.
    WrongTopic => "wrong_topic",
    /// A claim-checked payload differs from the sha256 its event states.
    ChecksumMismatch => "checksum_mismatch",
    /// A claim-checked payload cannot be read (missing, or a bad URI).
    BlobUnreadable => "blob_unreadable",
    /// A claim-checked segments payload is not the segments' JSON.
    InvalidSegments => "invalid_segments",
    /// A claim-checked chunks payload is not the chunks' JSON.
    InvalidChunks => "invalid_chunks",
    /// What a stage made of the input could not be written as JSON.
    Encode => "encode",
    /// The embedder refused the input for good.
    EmbeddingFailed => "embedding_failed",
    /// Retrieval failed for good.
    RetrievalFailed => "retrieval_failed",
    // The record is not an event this binary can read ([`CodecError`]).
    /// Not Avro single-object encoded.
    NotSingleObject => "not_single_object",
    /// Written with a schema this binary does not know.
    UnknownSchema => "unknown_schema",
    /// Another event type than the stage consumes on this topic.
    WrongEventType => "wrong_event_type",
    /// A schema of the catalog does not parse.
    InvalidSchema => "invalid_schema",
    /// An event could not be encoded.
    EncodeFailed => "encode_failed",
    /// The datum does not decode with its schema.
    Undecodable => "undecodable",
    // The work on the input died (docs/pipeline.md, "Isolation").
    /// The parser died on the document, or its attempts are used up.
    ParserCrashed => "parser_crashed",
    /// The chunker panicked on the document.
    ChunkerCrashed => "chunker_crashed",
    /// Parsing took longer than its wall-clock or CPU time.
    ParserTimeout => "parser_timeout",
    /// The parse worker's answer was larger than the document may produce.
    OutputTooLarge => "output_too_large",
    /// The parse worker overflowed its stack.
    TooDeep => "too_deep",
    /// The parse worker ran out of its address space.
    OutOfMemory => "out_of_memory",
}

impl std::fmt::Display for FailureCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&CodecError> for FailureCode {
    fn from(e: &CodecError) -> Self {
        match e {
            CodecError::NotSingleObject(_) => FailureCode::NotSingleObject,
            CodecError::UnknownFingerprint(_) => FailureCode::UnknownSchema,
            CodecError::WrongEventType { .. } => FailureCode::WrongEventType,
            CodecError::Schema { .. } => FailureCode::InvalidSchema,
            CodecError::Encode { .. } => FailureCode::EncodeFailed,
            CodecError::Decode { .. } => FailureCode::Undecodable,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// The codes as operators, dashboards and stored rows know them.
    const DOCUMENTED: &[&str] = &[
        "invalid_event",
        "wrong_topic",
        "checksum_mismatch",
        "blob_unreadable",
        "invalid_segments",
        "invalid_chunks",
        "encode",
        "embedding_failed",
        "retrieval_failed",
        "not_single_object",
        "unknown_schema",
        "wrong_event_type",
        "invalid_schema",
        "encode_failed",
        "undecodable",
        "parser_crashed",
        "chunker_crashed",
        "parser_timeout",
        "output_too_large",
        "too_deep",
        "out_of_memory",
    ];

    #[test]
    fn every_code_is_unique_and_exactly_the_documented_string() {
        let wire: Vec<&str> = FailureCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(wire, DOCUMENTED);
        assert_eq!(wire.iter().collect::<HashSet<_>>().len(), wire.len(), "a code is used twice: {wire:?}");
        for c in FailureCode::ALL {
            assert_eq!(c.to_string(), c.as_str());
        }
    }

    #[test]
    fn codec_errors_keep_their_codes() {
        use rag_events::{Codec, DocumentDeleted, DocumentUploaded, Envelope};
        let codec = Codec::embedded().unwrap();
        let code = |e: CodecError| FailureCode::from(&e).as_str();
        assert_eq!(code(codec.decode_any(b"not avro at all").unwrap_err()), "not_single_object");
        let mut unknown = rag_events::codec::MAGIC.to_vec();
        unknown.extend_from_slice(&[9; 8]);
        unknown.extend_from_slice(b"xx");
        assert_eq!(code(codec.decode_any(&unknown).unwrap_err()), "unknown_schema");
        let deleted =
            |id: &str| DocumentDeleted { envelope: Envelope::originating("ws", "test"), document_id: id.into(), deleted_by: "u".into() };
        // A document id the schema's uuid cannot hold.
        assert_eq!(code(codec.encode(&deleted("d")).unwrap_err()), "encode_failed");
        // A valid header followed by a truncated datum.
        let bytes = codec.encode(&deleted(&uuid::Uuid::nil().to_string())).unwrap();
        assert_eq!(code(codec.decode_any(&bytes[..bytes.len() - 5]).unwrap_err()), "undecodable");
        // The right bytes read as the wrong type.
        assert_eq!(code(codec.decode::<DocumentUploaded>(&bytes).unwrap_err()), "wrong_event_type");
    }
}
