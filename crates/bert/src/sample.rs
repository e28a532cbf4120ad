//! Benchmark inputs: English texts of a given length in word pieces
//! (chunk-like, so the encoder is timed on what the indexer feeds it).

use crate::SentenceEncoder;

const WORDS: &[&str] = &[
    "the",
    "boundary",
    "layer",
    "thickness",
    "increases",
    "with",
    "distance",
    "from",
    "leading",
    "edge",
    "pressure",
    "gradient",
    "revenue",
    "grew",
    "percent",
    "compared",
    "previous",
    "year",
    "heat",
    "transfer",
    "coefficient",
    "measured",
    "at",
    "stagnation",
    "point",
    "wing",
    "model",
    "was",
    "tested",
    "in",
    "supersonic",
    "wind",
    "tunnel",
    "results",
    "show",
    "that",
    "flow",
    "separation",
    "occurs",
    "near",
    "trailing",
    "and",
    "of",
    "a",
    "is",
    "to",
];

/// Text of `pieces` word pieces ([CLS] and [SEP] included; one word more
/// when the last word splits into several pieces).
pub fn text_with_pieces(encoder: &SentenceEncoder, pieces: usize, seed: usize) -> String {
    let mut words: Vec<&str> = Vec::new();
    let mut i = seed;
    loop {
        words.push(WORDS[i % WORDS.len()]);
        i = i.wrapping_mul(31).wrapping_add(7);
        let text = words.join(" ");
        if encoder.token_ids(&text).map(|t| t.len()).unwrap_or(pieces) >= pieces {
            return text;
        }
    }
}
