//! How an answer is made: the options one attempt (`attempt.rs`) and the
//! whole answer (`answering.rs`) share, and their defaults.

use crate::LlmFallback;

/// Sections per extractive answer.
pub const EXTRACTIVE_SECTIONS: usize = 3;

/// Earlier turns given to the model.
pub const HISTORY_TURNS: usize = 6;

/// How an answer is made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnswerOptions {
    /// What happens when the model fails (down, timeouts, invalid output
    /// twice).
    pub fallback: LlmFallback,
    /// Characters of evidence in the prompt.
    pub evidence_chars: usize,
    /// Check the answer against what it cites before showing it.
    pub verify: bool,
    /// The decision's score (0 to 1, [`crate::decision`]) below which an
    /// answer is held back, when the provider gives token probabilities
    /// (otherwise the check's own true/false decides), one per form of
    /// question: the score means something else for an English question
    /// over Vietnamese text, a question without its marks or a part of a
    /// two-part question, so each operating point is chosen apart
    /// (`rag-dev eval operating-points`, docs/answers.md).
    pub thresholds: crate::decision::FormThresholds,
    /// The question is a part of one that asks several things (its form
    /// is then `compound`, whatever its language).
    pub part_of_several: bool,
    /// The question was typed without its marks
    /// ([`crate::decision::typed_without_marks`] of it as asked: the model
    /// may be given it restored).
    pub without_marks: bool,
    /// The weights of the decision's score.
    pub decision: crate::decision::DecisionModel,
    /// What retrieval found for this question, for the decision.
    pub retrieval: RetrievalConfidence,
    /// A model is shown only the first this many chunks (the answerer's
    /// evidence cutoff, `evidence::within_best`); a second attempt and an
    /// extractive answer (no model, or the model failed) read every chunk.
    pub llm_chunks: usize,
    /// A model is shown only this many evidence sentences, those an
    /// [`crate::EvidenceRanker`] finds closest to the question (0: all of them,
    /// and all of them when there is no ranker).
    pub evidence_sentences: usize,
    /// When the check holds an answer back, show the model the sentences
    /// of every retrieved chunk but those it cited (narrowed to the
    /// closest, with a ranker) and let it answer once more
    /// (`ANSWER_SECOND_LOOK`: the setting, and the report's
    /// `second_looks` / `first_look_*` fields in stored answers, keep the
    /// name they were released with).
    pub second_attempt: bool,
    /// A section's citations gain the evidence sentence that states its
    /// own words when its ids name another ([`crate::support`],
    /// `ANSWER_CITE_SUPPORT`).
    pub cite_support: bool,
    /// Which evidence sentences that read as instructions to the model are
    /// left out before it is shown them (`ANSWER_INSTRUCTION_FILTER`).
    pub instruction_filter: InstructionFilter,
}

/// What recognises the evidence sentences written to the model, which the
/// model is then never shown (`crate::injection`). The extractive answer
/// always leaves out those the phrases recognise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InstructionFilter {
    /// The phrase rules and the classifier over the evidence ranker's
    /// embeddings (`RankedEvidence::instructions`).
    #[default]
    PhrasesAndMeaning,
    /// The phrase rules only (as before the classifier was in the answer
    /// path: to measure what it adds).
    Phrases,
    /// None: to measure what the quoted-evidence framing holds on its own
    /// (issue 61's defence in depth). Never for uploads one does not trust.
    Off,
}

impl InstructionFilter {
    pub fn phrases(self) -> bool {
        self != InstructionFilter::Off
    }

    pub fn meaning(self) -> bool {
        self == InstructionFilter::PhrasesAndMeaning
    }
}

/// How sure retrieval was of a question's best passage.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RetrievalConfidence {
    /// The best retrieved chunk's cosine with the question.
    pub best_cosine: Option<f64>,
    /// Share of the query's words in the best lexical hit.
    pub lexical_coverage: Option<f64>,
}

/// The default of the answerer's evidence cutoff: chunks scoring below
/// this fraction of the best one are not shown to a model
/// (`evidence::within_best`, docs/answers.md).
pub const EVIDENCE_CUTOFF: f64 = 0.7;

/// The default of `evidence_sentences` (`ANSWER_EVIDENCE_SENTENCES`): the
/// evidence sentences closest to the question a model is shown
/// (docs/answers.md).
pub const EVIDENCE_SENTENCES: usize = 4;
