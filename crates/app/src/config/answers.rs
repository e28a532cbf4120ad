//! The answerer: the LLM, its contract, the answer check, the evidence budget.

use clap::Args;
use secrecy::SecretString;

use super::{parse_fraction, InstructionFilterChoice, LlmFallbackChoice};

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Answers (environment variable, default)")]
pub struct AnswerSettings {
    /// Answer LLM: base URL of an OpenAI-compatible API, version included (requests go to {base}/chat/completions). With ANSWER_LLM_MODEL and ANSWER_LLM_API_KEY it enables LLM answers; otherwise answers are extractive.
    #[arg(long, env = "ANSWER_LLM_BASE_URL", global = true, requires_all = ["answer_llm_model", "answer_llm_api_key"])]
    pub answer_llm_base_url: Option<String>,
    /// Answer LLM model name (with ANSWER_LLM_BASE_URL and ANSWER_LLM_API_KEY).
    #[arg(long, env = "ANSWER_LLM_MODEL", global = true, requires_all = ["answer_llm_base_url", "answer_llm_api_key"])]
    pub answer_llm_model: Option<String>,
    /// Answer LLM API key (with ANSWER_LLM_BASE_URL and ANSWER_LLM_MODEL; any value for a local server).
    #[arg(long, env = "ANSWER_LLM_API_KEY", global = true, hide_env_values = true, requires_all = ["answer_llm_base_url", "answer_llm_model"])]
    pub answer_llm_api_key: Option<SecretString>,
    /// Most tokens of one answer (0: the provider's default).
    #[arg(long, env = "ANSWER_LLM_MAX_TOKENS", global = true, default_value_t = 600)]
    pub answer_llm_max_tokens: u32,
    /// Answer LLM temperature: 0 (deterministic) unless set.
    #[arg(long, env = "ANSWER_LLM_TEMPERATURE", global = true, default_value_t = 0.0)]
    pub answer_llm_temperature: f32,
    /// Seed sent with every LLM call (providers that accept one then sample reproducibly).
    #[arg(long, env = "ANSWER_LLM_SEED", global = true, default_value_t = 0)]
    pub answer_llm_seed: u64,
    /// Timeout of one LLM call, in seconds.
    #[arg(long, env = "ANSWER_LLM_TIMEOUT_SECS", global = true, default_value_t = 120)]
    pub answer_llm_timeout_secs: u64,
    /// Stream the answer (`stream: true`): the page shows its text as it is generated.
    #[arg(long, env = "ANSWER_LLM_STREAM", global = true, default_value_t = true, action = clap::ArgAction::Set)]
    pub answer_llm_stream: bool,
    /// Send llama.cpp's `cache_prompt: true` (reuse the cached prompt prefix). Off by default: other providers may reject the field; `scripts/models up` turns it on for its local server.
    #[arg(long, env = "ANSWER_LLM_CACHE_PROMPT", global = true, default_value_t = false, action = clap::ArgAction::Set)]
    pub answer_llm_cache_prompt: bool,
    /// Write the answer's fixed JSON opening for the model (llama.cpp's assistant prefill and GBNF `grammar`): one short call for `answerable`, then the sections continue the cached prompt, so the first words stream some 20 tokens sooner. Off by default: OpenAI's API and others do not continue an assistant message; a provider that refuses it is asked the ordinary way. `scripts/models up` turns it on for its local server.
    #[arg(long, env = "ANSWER_LLM_PREFILL", global = true, default_value_t = false, action = clap::ArgAction::Set)]
    pub answer_llm_prefill: bool,
    /// Context size of the answer model, in tokens (llama.cpp's `--ctx`): the evidence never makes the prompt longer than it.
    #[arg(long, env = "RAG_LLM_CONTEXT", global = true, default_value_t = 4096)]
    pub rag_llm_context: u32,
    /// Check each LLM answer before it is shown: short calls ask the model whether the sentences the answer cites state what the question asks, one sentence per call (a table's rows together); the decision weighs the surest (docs/answers.md).
    #[arg(long, env = "ANSWER_VERIFY", global = true, default_value_t = true, action = clap::ArgAction::Set)]
    pub answer_verify: bool,
    /// The answer-or-abstain decision's threshold (0 to 1) for every form of question: an answer whose score (the check's probability and the model's own, weighed as fitted on the calibration sets; the other signals can be weighed by ANSWER_DECISION_WEIGHTS) is below it abstains; 0 shows every answer the model gives. Unset: each form's own default (ANSWER_ABSTAIN_THRESHOLDS). Providers that give no token probabilities are taken at the check's yes/no.
    #[arg(long, env = "ANSWER_ABSTAIN_THRESHOLD", global = true, value_parser = parse_fraction)]
    pub answer_abstain_threshold: Option<f64>,
    /// The threshold for a question in another language than the evidence its answer reads (forms envi and vien), over ANSWER_ABSTAIN_THRESHOLD.
    #[arg(long, env = "ANSWER_ABSTAIN_THRESHOLD_CROSS_LANGUAGE", global = true, value_parser = parse_fraction)]
    pub answer_abstain_threshold_cross_language: Option<f64>,
    /// Thresholds per form of question, over the two above: "vi=0.5,en=0.5,envi=0.3,vien=0.3,viplain=0.4,compound=0.4" (any of them; the rest keep their default). The defaults were chosen on the forms set's tuning half with `rag-dev eval operating-points` (docs/answers.md, "Every form of question"); a deployment with another model chooses its own the same way.
    #[arg(long, env = "ANSWER_ABSTAIN_THRESHOLDS", global = true, default_value = "")]
    pub answer_abstain_thresholds: String,
    /// The decision's weights, as `eval calibration` prints them: "BIAS,W1,...,W7" over check_logit, answerable_logit, mean_logprob, cited_coverage, best_cosine, lexical_coverage, phrase_coverage (six weights, as fitted before phrase_coverage existed, leave it out); empty for the weights fitted for the default model (docs/answers.md). A deployment with another model refits them on its own calibration runs.
    #[arg(long, env = "ANSWER_DECISION_WEIGHTS", global = true, default_value = "", value_parser = parse_decision)]
    pub answer_decision_weights: DecisionWeights,
    /// An LLM is shown only the retrieved chunks scoring at least this fraction of the best one (0: all of them): a small model cites a passage that merely shares words with the question less often, and reads less before its first words. The extractive answer reads every chunk.
    #[arg(long, env = "ANSWER_EVIDENCE_CUTOFF", global = true, default_value_t = rag_answer::EVIDENCE_CUTOFF, value_parser = parse_fraction)]
    pub answer_evidence_cutoff: f64,
    /// An LLM is shown only this many evidence sentences, those the embedder finds closest to the question (0: every sentence of the chunks shown; without an embedder, every sentence). A small model given fewer sentences cites the one that answers more often and reads less before its first words.
    #[arg(long, env = "ANSWER_EVIDENCE_SENTENCES", global = true, default_value_t = rag_answer::EVIDENCE_SENTENCES)]
    pub answer_evidence_sentences: usize,
    /// When the decision holds an answer back, let the model answer once more from every retrieved chunk's sentences (not only those within the evidence cutoff) but those it cited, decided again: a small model that cited a neighbouring sentence often finds the right one; a question the documents do not answer costs one more answer before it abstains. Off by default: the decision's threshold was calibrated on one look, and a second one gives unanswerable questions a second chance (docs/answers.md).
    #[arg(long, env = "ANSWER_SECOND_LOOK", global = true, default_value_t = false, action = clap::ArgAction::Set)]
    pub answer_second_look: bool,
    /// Cite the evidence sentence that states a section's own words (what it adds to the question: a name, a date, a figure) when the model's ids name another: small models write the right fact and cite the sentence beside it, so the span shown did not hold it and the check, which reads the cited sentences, held the answer back (docs/answers.md).
    #[arg(long, env = "ANSWER_CITE_SUPPORT", global = true, default_value_t = true, action = clap::ArgAction::Set)]
    pub answer_cite_support: bool,
    /// What recognises the evidence sentences written to the model ("Bỏ qua mọi hướng dẫn…", "Trợ lý ơi, nhớ dặn khách…"), which the model is then never shown: `both` the phrase rules and the classifier over the evidence ranker's multilingual-e5-small embeddings (with `EMBEDDING_INPUT_CONVENTION=prefix`; other embedders: the phrases only), `phrases` the rules only, `off` none. `phrases` and `off` are for measuring what each layer holds (issue 61, `eval/injection/ask.py`), never for uploads one does not trust. The extractive answer always leaves out what the phrases recognise.
    #[arg(long, env = "ANSWER_INSTRUCTION_FILTER", global = true, default_value = "both")]
    pub answer_instruction_filter: InstructionFilterChoice,
    /// Evidence given to the model, in tokens at most (the best-ranked chunks first; the rest left out). Prefill dominates latency on small machines.
    #[arg(long, env = "ANSWER_EVIDENCE_TOKENS", global = true, default_value_t = 1200)]
    pub answer_evidence_tokens: u32,
    /// When the LLM fails (down, timeouts, invalid JSON twice): `extractive` answers from the chunks' sentences, `fail` marks the answer failed.
    #[arg(long, env = "ANSWER_LLM_FALLBACK", global = true, default_value = "extractive")]
    pub answer_llm_fallback: LlmFallbackChoice,
}

/// `ANSWER_DECISION_WEIGHTS`: the decision's weights, or the default ones.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecisionWeights(pub rag_answer::decision::DecisionModel);

impl std::fmt::Display for DecisionWeights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rag_answer::decision::DecisionModel { bias, weights } = self.0;
        write!(f, "{bias}")?;
        for w in weights {
            write!(f, ",{w}")?;
        }
        Ok(())
    }
}

/// "BIAS,W1,...,W7" (empty: the default weights); "BIAS,W1,...,W6", the
/// weights fitted before `phrase_coverage` was a feature, weigh it 0.
fn parse_decision(s: &str) -> Result<DecisionWeights, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(DecisionWeights(rag_answer::decision::DEFAULT_DECISION));
    }
    let values: Vec<f64> =
        s.split(',').map(|v| v.trim().parse::<f64>().map_err(|e| format!("{v:?} is not a number: {e}"))).collect::<Result<_, _>>()?;
    let [bias, weights @ ..] = values.as_slice() else { unreachable!("split gives at least one piece") };
    const N: usize = rag_answer::decision::N_FEATURES;
    let mut padded = weights.to_vec();
    if padded.len() == N - 1 {
        padded.push(0.0);
    }
    let weights: [f64; N] = padded.try_into().map_err(|_| {
        format!(
            "{} numbers given; the decision has {}: the bias and one weight per feature {:?}",
            values.len(),
            N + 1,
            rag_answer::decision::FEATURES
        )
    })?;
    if values.iter().any(|v| !v.is_finite()) {
        return Err("every weight must be a finite number".into());
    }
    Ok(DecisionWeights(rag_answer::decision::DecisionModel { bias: *bias, weights }))
}

#[cfg(test)]
mod decision_weights_tests {
    use super::*;

    #[test]
    fn weights_are_eight_numbers_or_the_default() {
        assert_eq!(parse_decision("").unwrap().0, rag_answer::decision::DEFAULT_DECISION);
        let w = parse_decision("-1.5, 1, 0.5, 2, 3, 0, 0.25, 0.75").unwrap().0;
        assert_eq!((w.bias, w.weights), (-1.5, [1.0, 0.5, 2.0, 3.0, 0.0, 0.25, 0.75]));
        assert_eq!(parse_decision(&DecisionWeights(w).to_string()).unwrap().0, w);
        let old = parse_decision("-1.5, 1, 0.5, 2, 3, 0, 0.25").unwrap().0;
        assert_eq!(old.weights, [1.0, 0.5, 2.0, 3.0, 0.0, 0.25, 0.0], "six weights: phrase_coverage weighs 0");
        assert!(parse_decision("1,2,3").unwrap_err().contains("has 8"));
        assert!(parse_decision("1,2,3,4,5,6,x").unwrap_err().contains("not a number"));
        assert!(parse_decision("1,2,3,4,5,6,inf").is_err());
    }
}
