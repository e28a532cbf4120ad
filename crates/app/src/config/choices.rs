//! The settings that pick one of a few named behaviours. As clap enums,
//! `--help` lists the accepted values and a typo is refused at start with
//! the list, before any component is built.

use std::fmt;

use clap::ValueEnum;

/// Writes the value as it is spelled on the command line and in the
/// environment (`openai`, `input-type`), so reports print what the user set.
macro_rules! display_as_value {
    ($($choice:ty),*) => {$(
        impl fmt::Display for $choice {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.to_possible_value() {
                    Some(value) => f.write_str(value.get_name()),
                    None => Ok(()),
                }
            }
        }
    )*};
}

display_as_value!(
    OcrChoice,
    ParserIsolationChoice,
    EmbedderChoice,
    EncoderPrecisionChoice,
    InputConventionChoice,
    LlmFallbackChoice,
    LexicalIndexChoice,
    LogFormat,
    RevisionRetentionChoice
);

/// `OCR`: PDF pages without a text layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OcrChoice {
    /// Tesseract + pdftoppm when installed.
    Auto,
    /// Pages without a text layer are marked as having no text.
    Off,
}

/// `PARSER_ISOLATION`: where documents are parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ParserIsolationChoice {
    /// A child process per document, limited in memory and time.
    Process,
    /// In this process (a hostile upload can take it down: trusted input only).
    None,
}

/// `EMBEDDER`: what the indexer embeds chunks with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EmbedderChoice {
    /// `local` when EMBEDDING_MODEL_DIR is set (scripts/stack and the
    /// container image set it to multilingual-e5-small), else `none`.
    Auto,
    /// Lexical search only.
    None,
    /// The model in EMBEDDING_MODEL_DIR, in process.
    Local,
    /// Any OpenAI-compatible /v1/embeddings.
    Openai,
}

/// `EMBEDDING_PRECISION`: how the in-process encoder computes its
/// projections (docs/models.md has the measurements behind the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EncoderPrecisionChoice {
    /// int8 where the CPU has AVX-512 VNNI, fp32 elsewhere.
    Auto,
    /// The model as trained.
    Fp32,
    /// Weights per channel and activations per token in 8 bits.
    Int8,
}

impl EncoderPrecisionChoice {
    /// What `auto` means on this CPU.
    pub fn resolve(self) -> rag_bert::Precision {
        match self {
            EncoderPrecisionChoice::Fp32 => rag_bert::Precision::Fp32,
            EncoderPrecisionChoice::Int8 => rag_bert::Precision::Int8,
            EncoderPrecisionChoice::Auto if rag_bert::gemm_i8::has_vnni() => rag_bert::Precision::Int8,
            EncoderPrecisionChoice::Auto => rag_bert::Precision::Fp32,
        }
    }
}

/// `EMBEDDING_INPUT_CONVENTION`: how the model tells a query from a passage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InputConventionChoice {
    /// `prefix` for the in-process e5 model, `none` otherwise.
    Auto,
    /// The text as is (symmetric models).
    None,
    /// `query: ` / `passage: ` prepended.
    Prefix,
    /// An `input_type` field in each request.
    InputType,
}

impl InputConventionChoice {
    /// `e5_in_process`: the in-process model is the packed e5 (trained
    /// with the prefixes).
    pub fn resolve(self, e5_in_process: bool) -> rag_embed::InputConvention {
        match self {
            InputConventionChoice::Auto if e5_in_process => rag_embed::InputConvention::Prefix,
            InputConventionChoice::Auto | InputConventionChoice::None => rag_embed::InputConvention::None,
            InputConventionChoice::Prefix => rag_embed::InputConvention::Prefix,
            InputConventionChoice::InputType => rag_embed::InputConvention::InputType,
        }
    }
}

/// `ANSWER_INSTRUCTION_FILTER`: what recognises evidence sentences written
/// to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InstructionFilterChoice {
    /// The phrase rules and the classifier over the ranker's embeddings.
    Both,
    /// The phrase rules only.
    Phrases,
    /// None (to measure the quoted-evidence framing alone).
    Off,
}

impl From<InstructionFilterChoice> for rag_answer::InstructionFilter {
    fn from(choice: InstructionFilterChoice) -> Self {
        match choice {
            InstructionFilterChoice::Both => rag_answer::InstructionFilter::PhrasesAndMeaning,
            InstructionFilterChoice::Phrases => rag_answer::InstructionFilter::Phrases,
            InstructionFilterChoice::Off => rag_answer::InstructionFilter::Off,
        }
    }
}

/// `ANSWER_LLM_FALLBACK`: what an answer becomes when the LLM fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LlmFallbackChoice {
    /// Answer from the chunks' sentences.
    Extractive,
    /// Mark the answer failed.
    Fail,
}

impl From<LlmFallbackChoice> for rag_answer::LlmFallback {
    fn from(choice: LlmFallbackChoice) -> Self {
        match choice {
            LlmFallbackChoice::Extractive => rag_answer::LlmFallback::Extractive,
            LlmFallbackChoice::Fail => rag_answer::LlmFallback::Fail,
        }
    }
}

/// `LEXICAL_INDEX`: where BM25 is scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LexicalIndexChoice {
    /// An in-memory inverted index per searched workspace, caught up with Postgres before each query.
    Memory,
    /// One SQL statement over the postings table (slow past ~10,000 chunks; kept as the reference).
    Postgres,
}

/// `LOG_FORMAT`: how stderr logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// For people.
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_print_as_they_are_spelled_in_the_environment() {
        assert_eq!(EmbedderChoice::Openai.to_string(), "openai");
        assert_eq!(InputConventionChoice::InputType.to_string(), "input-type");
        assert_eq!(LlmFallbackChoice::Fail.to_string(), "fail");
        assert_eq!(LogFormat::Json.to_string(), "json");
        assert_eq!(OcrChoice::Off.to_string(), "off");
    }

    #[test]
    fn a_misspelt_choice_is_refused_with_the_accepted_values() {
        let vars = [("EMBEDDER".to_string(), "openia".to_string())].into_iter().collect();
        let err = crate::config::Settings::from_vars(&vars).expect_err("openia is not an embedder");
        let text = err.to_string();
        assert!(text.contains("openia") && text.contains("openai") && text.contains("local"), "{text}");
    }

    #[test]
    fn the_default_embedder_is_the_installed_model_in_process() {
        // The default as declared (the process environment of a developer
        // who sourced .local/models.env must not decide this test).
        use clap::CommandFactory;
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            settings: crate::config::Settings,
        }
        let command = Only::command();
        let embedder = command.get_arguments().find(|a| a.get_id() == "embedder").expect("the EMBEDDER setting");
        assert_eq!(embedder.get_default_values(), ["auto"]);
        let with_dir = |dir: &str, choice: &str| {
            let vars = [("EMBEDDER".to_string(), choice.to_string()), ("EMBEDDING_MODEL_DIR".to_string(), dir.to_string())];
            crate::config::Settings::from_vars(&vars.into_iter().collect()).expect("valid settings").embedding.embedder_choice()
        };
        assert_eq!(with_dir("/opt/models/multilingual-e5-small", "auto"), EmbedderChoice::Local);
        assert_eq!(with_dir("", "auto"), EmbedderChoice::None);
        assert_eq!(with_dir("/opt/models/multilingual-e5-small", "none"), EmbedderChoice::None);
        assert_eq!(with_dir("", "openai"), EmbedderChoice::Openai);
    }

    #[test]
    fn secrets_are_redacted_in_debug_output() {
        let vars = [
            ("JWT_SECRET".to_string(), "jwt-secret-that-must-not-be-printed".to_string()),
            ("S3_SECRET_KEY".to_string(), "s3-key-that-must-not-be-printed".to_string()),
            ("ANSWER_LLM_BASE_URL".to_string(), "http://127.0.0.1:1/v1".to_string()),
            ("ANSWER_LLM_MODEL".to_string(), "m".to_string()),
            ("ANSWER_LLM_API_KEY".to_string(), "llm-key-that-must-not-be-printed".to_string()),
            ("EMBEDDING_API_KEY".to_string(), "embedding-key-that-must-not-be-printed".to_string()),
            ("DATABASE_URL".to_string(), "postgres://rag:db-password-not-printed@127.0.0.1/rag".to_string()),
        ]
        .into_iter()
        .collect();
        let settings = crate::config::Settings::from_vars(&vars).expect("valid settings");
        assert!(settings.answers.answer_llm_api_key.is_some());
        let printed = format!("{settings:?} {:?} {:?}", settings.blobs(), settings.store());
        for secret in ["jwt-secret", "s3-key", "llm-key", "embedding-key", "db-password"] {
            assert!(!printed.contains(secret), "{secret} printed in {printed}");
        }
    }

    #[test]
    fn the_answer_llm_takes_its_url_model_and_key_together_or_none() {
        let vars = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let one = crate::config::Settings::from_vars(&vars(&[("ANSWER_LLM_BASE_URL", "http://127.0.0.1:1/v1")]));
        let message = one.expect_err("a URL alone is refused").to_string();
        assert!(message.contains("--answer-llm-model") && message.contains("--answer-llm-api-key"), "{message}");
        let none = crate::config::Settings::from_vars(&vars(&[])).expect("none is valid");
        assert!(none.answer_llm().expect("extractive").is_none());
        // Set to the empty string: unset, as in an env file that blanks them.
        let blank =
            crate::config::Settings::from_vars(&vars(&[("ANSWER_LLM_BASE_URL", ""), ("ANSWER_LLM_MODEL", ""), ("ANSWER_LLM_API_KEY", "")]))
                .expect("blank is valid");
        assert!(blank.answer_llm().expect("extractive").is_none());
    }

    #[test]
    fn unset_and_blank_settings_are_none() {
        let vars = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let blank = crate::config::Settings::from_vars(&vars(&[
            ("EMBEDDER", "openai"),
            ("EMBEDDING_BASE_URL", ""),
            ("EMBEDDING_MODEL", " "),
            ("EMBEDDING_MODEL_DIR", ""),
            ("JWT_SECRET", ""),
        ]))
        .expect("blank values are valid");
        assert!(blank.embedding.model_dir().is_none());
        let Err(e) = blank.embedder() else { panic!("openai without its settings") };
        let message = e.to_string();
        assert!(message.contains("EMBEDDING_BASE_URL, EMBEDDING_MODEL, EMBEDDING_DIMENSION"), "{message}");
        let Err(e) = blank.jwt() else { panic!("no secret") };
        let message = e.to_string();
        assert!(message.contains("JWT_SECRET is not set"), "{message}");
    }
}

/// `REVISION_RETENTION`: what stays of a document's revisions that search
/// no longer reads (docs/sources.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RevisionRetentionChoice {
    /// Their text while any answer cites them (dropped ten minutes after
    /// they were superseded otherwise).
    Cited,
    /// Every revision's text, always.
    All,
}
