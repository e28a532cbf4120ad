//! The model directory's configuration files (`config.json`,
//! `sentence_bert_config.json`, `1_Pooling/config.json`).

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub struct BertConfig {
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f32,
    pub vocab_size: usize,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default)]
    pub model_type: Option<String>,
}

fn default_type_vocab() -> usize {
    2
}
fn default_eps() -> f32 {
    1e-12
}
fn default_act() -> String {
    "gelu".into()
}

#[derive(Deserialize)]
pub(crate) struct SentenceBertConfig {
    pub(crate) max_seq_length: Option<usize>,
}

#[derive(Deserialize, Default)]
pub(crate) struct PoolingConfig {
    #[serde(default)]
    pub(crate) pooling_mode_cls_token: bool,
    #[serde(default)]
    pub(crate) pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pub(crate) pooling_mode_max_tokens: bool,
    #[serde(default)]
    pub(crate) pooling_mode_mean_sqrt_len_tokens: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pooling {
    Mean,
    Cls,
}
