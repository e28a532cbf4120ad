//! Typed configuration from environment variables (or the matching flags),
//! each with a documented default, in one group per component
//! (`kafka.rs`, `database.rs`, ...). A command flattens the groups it uses,
//! and its `--help` lists them; [`Settings`] is all of them.

use clap::Args;

mod answers;
mod api;
mod blobs;
mod choices;
mod components;
mod database;
mod embedding;
mod jwt;
mod kafka;
mod parsing;
mod retrieval;
mod sources;
mod stages;
mod uploads;

pub use answers::AnswerSettings;
pub use api::ApiSettings;
pub use blobs::BlobSettings;
pub use choices::{
    EmbedderChoice, EncoderPrecisionChoice, InputConventionChoice, InstructionFilterChoice, LexicalIndexChoice, LlmFallbackChoice,
    LogFormat, OcrChoice, ParserIsolationChoice, RevisionRetentionChoice,
};
pub use database::DatabaseSettings;
pub use embedding::EmbeddingSettings;
pub use jwt::JwtSettings;
pub use kafka::KafkaSettings;
pub use parsing::ParseSettings;
use rag_blobs::BlobConfig;
use rag_bus::BusConfig;
use rag_events::Topics;
use rag_store::StoreConfig;
pub use retrieval::RetrievalSettings;
pub use sources::SourceSettings;
pub use stages::{RetryPolicy, StageSettings};
pub use uploads::UploadSettings;

/// Every setting: what `run` (all stages and the API in one process) and
/// the development tools read. A command that needs less flattens only its
/// groups, so its `--help` lists only what it uses.
#[derive(Args, Debug, Clone)]
pub struct Settings {
    #[command(flatten)]
    pub kafka: KafkaSettings,
    #[command(flatten)]
    pub stages: StageSettings,
    #[command(flatten)]
    pub database: DatabaseSettings,
    #[command(flatten)]
    pub blobs: BlobSettings,
    #[command(flatten)]
    pub uploads: UploadSettings,
    #[command(flatten)]
    pub parsing: ParseSettings,
    #[command(flatten)]
    pub embedding: EmbeddingSettings,
    #[command(flatten)]
    pub retrieval: RetrievalSettings,
    #[command(flatten)]
    pub answers: AnswerSettings,
    #[command(flatten)]
    pub jwt: JwtSettings,
    #[command(flatten)]
    pub api: ApiSettings,
    #[command(flatten)]
    pub sources: SourceSettings,
}

/// The settings alone, as a command of their own (their variables, and
/// parsing them without the process's).
#[derive(clap::Parser)]
struct Only {
    #[command(flatten)]
    settings: Settings,
}

impl Settings {
    /// The settings given by `vars` (variable name to value), as if they
    /// were the whole environment: the in-process test application and the
    /// settings' tests configure themselves this way. The process's own
    /// variables are not read, so a shell with the models profile sourced
    /// (`EMBEDDING_INPUT_CONVENTION`, `ANSWER_LLM_BASE_URL`, ...) changes
    /// no test; what `vars` lacks takes its default.
    pub fn from_vars(vars: &std::collections::HashMap<String, String>) -> Result<Settings, clap::Error> {
        use clap::{CommandFactory, FromArgMatches};
        let mut argv = vec!["rag-engine".to_string()];
        for arg in Only::command().get_arguments() {
            let (Some(env), Some(long)) = (arg.get_env(), arg.get_long()) else { continue };
            if let Some(value) = env.to_str().and_then(|name| vars.get(name)) {
                argv.push(format!("--{long}={value}"));
            }
        }
        let without_environment = Only::command().mut_args(|arg| arg.env(None::<&'static str>));
        let matches = without_environment.try_get_matches_from(argv)?;
        Ok(Only::from_arg_matches(&matches)?.settings)
    }

    /// The names of the environment variables the settings read.
    pub fn variables() -> Vec<String> {
        use clap::CommandFactory;
        Only::command().get_arguments().filter_map(|a| a.get_env()).filter_map(|e| e.to_str()).map(str::to_string).collect()
    }

    pub fn topics(&self) -> Topics {
        self.kafka.topics()
    }

    /// The bus of a stage process: Kafka and how its stages run.
    pub fn bus(&self) -> BusConfig {
        self.kafka.bus(&self.stages)
    }

    pub fn jwt(&self) -> anyhow::Result<rag_api::JwtAuth> {
        self.jwt.jwt()
    }

    pub fn api(&self) -> rag_api::ApiConfig {
        rag_api::ApiConfig {
            source_folder_roots: self.sources.folder_roots(),
            source_s3_buckets: self.sources.buckets(),
            ..self.api.api(&self.uploads)
        }
    }

    pub fn store(&self) -> StoreConfig {
        self.database.store()
    }

    pub fn blobs(&self) -> BlobConfig {
        self.blobs.blobs()
    }
}

/// A group's values from the environment and its defaults, for a command
/// that does not take the group's flags (a producer-only command still
/// needs the runner part of a `BusConfig`, say).
pub fn from_env<T: Args + clap::FromArgMatches>() -> Result<T, clap::Error> {
    let command = T::augment_args(clap::Command::new("rag-engine"));
    T::from_arg_matches(&command.try_get_matches_from(["rag-engine"])?)
}

/// Workspace ids appear in object keys and topics' data: keep them plain.
pub fn validate_workspace(ws: &str) -> anyhow::Result<()> {
    if rag_events::is_workspace_id(ws) {
        Ok(())
    } else {
        anyhow::bail!("invalid workspace id {ws:?}: use 1-64 characters of A-Z a-z 0-9 - _ . starting with a letter or digit")
    }
}

/// A number from 0 to 1 (a probability threshold).
fn parse_fraction(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|e| format!("{s:?} is not a number: {e}"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is not between 0 and 1"))
    }
}
