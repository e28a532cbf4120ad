//! What an answer says while it is written, and what ranks the evidence a
//! model is shown: the two things a caller of the answer crate hands in
//! besides its options.

use crate::Citation;

/// How close each evidence sentence is to the question (the embedder's
/// cosine, say), so a model is shown the few that can answer it; and,
/// from the same embeddings, which sentences read as written to the model
/// (`injection::classifier`), so it is never shown them.
pub trait EvidenceRanker: Sync {
    /// A score and a flag per text; None when it cannot tell (the model is
    /// then shown every sentence the phrase rules let through).
    fn rank<'a>(
        &'a self,
        question: &'a str,
        texts: &'a [String],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<RankedEvidence>> + Send + 'a>>;
}

/// What an [`EvidenceRanker`] says of the evidence sentences, one entry per
/// text in each list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RankedEvidence {
    /// Higher is closer to the question.
    pub closeness: Vec<f64>,
    /// The sentence reads as written to the model, by its meaning (empty:
    /// the ranker's embeddings are not those the classifier reads).
    pub instructions: Vec<bool>,
}

/// A section while the answer is written: its text so far and, once the
/// model has closed it, its citations, grounded as the final answer's
/// are (the check may still turn the whole answer into an abstention).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamedSection {
    pub text: String,
    pub closed: bool,
    pub citations: Vec<Citation>,
}

/// What the answer says so far, while the model writes it.
pub type OnPartial<'a> = &'a mut (dyn FnMut(&[StreamedSection]) + Send);
