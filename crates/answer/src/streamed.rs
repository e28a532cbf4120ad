//! What an answer says while it is written, and what ranks the evidence a
//! model is shown: the two things a caller of the answer crate hands in
//! besides its options.

use crate::Citation;

/// How close each evidence sentence is to the question (the embedder's
/// cosine, say), so a model is shown the few that can answer it.
pub trait EvidenceRanker: Sync {
    /// One score per text, higher is closer; None when it cannot tell (the
    /// model is then shown every sentence).
    fn rank<'a>(
        &'a self,
        question: &'a str,
        texts: &'a [String],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<Vec<f64>>> + Send + 'a>>;
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
