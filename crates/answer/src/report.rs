//! The answer's diagnostics (`CitationReport`): what grounding dropped,
//! how the model's output was read, what the check and the decision said,
//! kept in the message metadata (`retrieval.citation_report`) for the doors
//! and the evaluator. Its field names are the stored JSON's: the store's
//! view of it is tested against them (`rag_store::messages`).

use serde::{Deserialize, Serialize};

use crate::decision;

/// What grounding dropped, and how the model's output was read, for the
/// message metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CitationReport {
    /// Ids the model cited that the prompt did not show.
    #[serde(default)]
    pub dropped_source_ids: Vec<String>,
    /// Sections left without a valid citation: not shown as facts.
    #[serde(default)]
    pub unsupported_sections: Vec<String>,
    /// Sections whose text held a number or a name their citations do not
    /// (`faithful`): shown as the cited text verbatim instead; each as
    /// the model wrote it, with what was missing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unfaithful_sections: Vec<String>,
    /// Figures of shown sections that their citations do not state but
    /// that the system recomputed from cited numbers (`faithful`): "12,6% =
    /// (351,9 − 312,5) / 312,5 × 100 = 12,61", shown after the section.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub derived_figures: Vec<String>,
    /// Shown sections the model wrote in another language than the
    /// question's (it copied the cited sentence), rewritten in the
    /// question's (`rewrite`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rewritten_sections: usize,
    /// Questions the model wrote into its sections (the question asked,
    /// or another part of it), taken out (`faithful::drop_questions`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub question_sentences: usize,
    /// Sub-sentence quotes that narrowed a highlight / that were not an
    /// exact part of a cited sentence (ignored).
    #[serde(default)]
    pub narrowed_quotes: usize,
    /// Sections whose text copies an evidence sentence whole, cited by it
    /// although the model named another.
    #[serde(default)]
    pub recited_sections: usize,
    /// Sections given the evidence sentence that states their own words
    /// (what they add to the question) when their ids named another or
    /// none (`support`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub supported_sections: usize,
    #[serde(default)]
    pub rejected_quotes: usize,
    /// Replies read only leniently (the provider ignored the schema).
    #[serde(default)]
    pub lenient_parses: usize,
    /// Replies that could not be read at all (each one asked again once).
    #[serde(default)]
    pub invalid_outputs: usize,
    /// The check of the answer against what it cites: Some(false) turned
    /// the answer into an abstention; None when not checked (off, no
    /// answer to check, or the check itself failed: `verify_error`).
    #[serde(default)]
    pub verified: Option<bool>,
    /// How sure the check was that the cited sentences answer (0 to 1,
    /// `contract::verdict_probability`), when the provider gave token
    /// probabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_score: Option<f64>,
    /// The sections of an answer the check rejected (not shown), so an
    /// operator can see what was held back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected_sections: Vec<String>,
    /// The check call's time inside the model server (prefill + decode, its
    /// `timings`), when the server reports it: with the answer's own, what
    /// the model server alone took for this answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_llm_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_error: Option<String>,
    /// Second looks at the evidence (0 or 1): the check held the first
    /// answer back, and the model was shown the next closest sentences.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub second_looks: usize,
    /// The check's certainty about the first look's answer, when a second
    /// look followed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_look_score: Option<f64>,
    /// The first look's time inside the model server (its answer and
    /// check), when a second look followed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_look_llm_ms: Option<u64>,
    /// Evidence sentences written to the model ("Ignore all previous
    /// instructions…", [`injection`]), kept out of what it was shown.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub instruction_units: usize,
    /// The decision's score ([`decision`]: every signal weighed), compared
    /// with the threshold of the question's form (`form`,
    /// `ANSWER_ABSTAIN_THRESHOLDS`); None without token probabilities
    /// (the check's yes/no decided).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_score: Option<f64>,
    /// The form of question whose threshold the decision used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<decision::QuestionForm>,
    /// The model's probability that the evidence answers at all (its
    /// `answerable` token: P(true) over P(true) + P(false)), when the
    /// provider gave token probabilities (`signals`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answerable_score: Option<f64>,
    /// The mean log-probability of the answer's tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_logprob: Option<f64>,
    /// Share of the question's content words in the cited sentences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cited_coverage: Option<f64>,
    /// Share of the question's consecutive word pairs in the cited
    /// sentences (`signals::cited_phrase_coverage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cited_phrase_coverage: Option<f64>,
    /// Quote-based answers (before evidence ids): quotes found in no
    /// chunk. Always 0 now: kept so older answers' metadata still reads.
    #[serde(default)]
    pub unlocated_quotes: usize,
}

impl CitationReport {
    /// Adds another part's report to this one: lists joined, counts added;
    /// the scores stay this one's (the first part's).
    pub fn absorb(&mut self, o: CitationReport) {
        self.dropped_source_ids.extend(o.dropped_source_ids);
        self.unsupported_sections.extend(o.unsupported_sections);
        self.unfaithful_sections.extend(o.unfaithful_sections);
        self.derived_figures.extend(o.derived_figures);
        self.question_sentences += o.question_sentences;
        self.rewritten_sections += o.rewritten_sections;
        self.rejected_sections.extend(o.rejected_sections);
        self.narrowed_quotes += o.narrowed_quotes;
        self.recited_sections += o.recited_sections;
        self.supported_sections += o.supported_sections;
        self.rejected_quotes += o.rejected_quotes;
        self.lenient_parses += o.lenient_parses;
        self.invalid_outputs += o.invalid_outputs;
        self.second_looks += o.second_looks;
        self.unlocated_quotes += o.unlocated_quotes;
        self.instruction_units += o.instruction_units;
        self.verify_llm_ms = match (self.verify_llm_ms, o.verify_llm_ms) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.verify_error = self.verify_error.take().or(o.verify_error);
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
