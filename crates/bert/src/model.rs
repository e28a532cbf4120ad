//! The BERT encoder itself: its weights (fp32 or int8 projections), the
//! layers, and a forward pass over sequences packed back to back.

use std::path::PathBuf;

use crate::gemm::{matmul, PackedMatrix};
use crate::gemm_i8::{matmul_i8, PackedI8, QuantizedRows};
use crate::{ops, packed, BertConfig, LoadError, Precision};

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

pub(crate) fn check_shape(cfg: &BertConfig) -> Result<(), LoadError> {
    let h = cfg.hidden_size;
    if cfg.num_attention_heads == 0 || !h.is_multiple_of(cfg.num_attention_heads) {
        return Err(LoadError::Unsupported(format!("hidden size {h} not divisible into {} heads", cfg.num_attention_heads)));
    }
    if cfg.hidden_act != "gelu" {
        return Err(LoadError::Unsupported(format!("activation {} (only the erf GELU of BERT is implemented)", cfg.hidden_act)));
    }
    Ok(())
}

pub(crate) struct BertModel {
    pub(crate) cfg: BertConfig,
    word: WordEmbeddings,
    position: Vec<f32>,
    token_type0: Vec<f32>,
    embed_norm: LayerNorm,
    layers: Vec<Layer>,
}

/// Per-thread buffers, reused across layers and batches.
#[derive(Default)]
pub(crate) struct Scratch {
    pub(crate) x: Vec<f32>,
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    tmp: Vec<f32>,
    inter: Vec<f32>,
    scores: Vec<f32>,
    keys: PackedMatrix,
    values: PackedMatrix,
    quant: QuantizedRows,
}

pub(crate) struct Weights {
    pub(crate) path: PathBuf,
    pub(crate) bytes: Vec<u8>,
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
    pub(crate) fn load(cfg: BertConfig, weights: &Weights, precision: Precision) -> Result<Self, LoadError> {
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
    pub(crate) fn load_packed(p: &packed::PackedModel<'_>, precision: Precision) -> Result<Self, String> {
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
    pub(crate) fn forward(&self, seqs: &[&[u32]], s: &mut Scratch) {
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
