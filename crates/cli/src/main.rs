//! `rag-engine`: runs the pipeline's stages, the user commands (upload,
//! docs, search, ask, setup) and the operator commands of `rag-ops`. The
//! configuration and the stages come from `rag-app`; benchmarks, the chaos
//! harness and evaluations are a separate binary (`rag-dev`, not shipped).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod ask;
mod docs;
mod page_png;
mod search;
mod setup;
mod upload;

use rag_app::config::{DatabaseSettings, JwtSettings, KafkaSettings, LogFormat, Settings};
use rag_app::run;
use rag_ops::{dlq, keys, rebuild, replay, sources, token, verify, workspaces};

const AFTER_HELP: &str = "\
Other environment variables:
  RUST_LOG              log filter (default: info,rdkafka=warn,sqlx=warn)

Every command that prints data takes --json. Exit status is non-zero on failure.";

#[derive(Parser, Debug)]
#[command(name = "rag-engine", version, about = "Explainable RAG on an event-sourced pipeline (Kafka, Postgres + pgvector, S3)",
          after_help = AFTER_HELP, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log format on stderr: text or json.
    #[arg(long, env = "LOG_FORMAT", default_value = "text", global = true)]
    log_format: LogFormat,
}

/// Each command takes the setting groups it uses (its `--help` lists them
/// with their variables and defaults); `run` and the operator commands take
/// them all.
#[derive(Subcommand, Debug)]
enum Command {
    /// Run pipeline stages until SIGINT/SIGTERM (`all`: every stage in one process).
    Run {
        #[command(flatten)]
        args: run::RunArgs,
        #[command(flatten)]
        settings: Settings,
    },
    /// Apply the database migrations (embedded in the binary).
    Migrate {
        #[command(flatten)]
        database: DatabaseSettings,
    },
    /// Create what the pipeline needs: topics, bucket, migrations. Idempotent.
    Init {
        #[command(flatten)]
        settings: setup::InitSettings,
    },
    /// Manage Kafka topics.
    Topics {
        #[command(subcommand)]
        command: setup::TopicsCommand,
        #[command(flatten)]
        kafka: KafkaSettings,
    },
    /// Store files (or whole directories) and produce DocumentUploaded for each.
    Upload {
        #[command(flatten)]
        args: upload::UploadArgs,
        #[command(flatten)]
        settings: upload::UploadCommandSettings,
    },
    /// Inspect documents.
    Docs {
        #[command(subcommand)]
        command: docs::DocsCommand,
        #[command(flatten)]
        settings: docs::DocsSettings,
    },
    /// Ask a question; waits for the answer and prints it with numbered citations.
    Ask {
        #[command(flatten)]
        args: ask::AskArgs,
        #[command(flatten)]
        settings: ask::AskSettings,
    },
    /// Search a workspace: ranked chunks with scores and positions.
    Search {
        #[command(flatten)]
        args: search::SearchArgs,
        #[command(flatten)]
        settings: search::SearchSettings,
    },
    /// Mint a bearer token for the HTTP API (signed with JWT_SECRET).
    Token {
        #[command(flatten)]
        args: token::TokenArgs,
        #[command(flatten)]
        jwt: JwtSettings,
    },
    /// Manage users' API keys (bearer credentials for the API, OpenAI-compatible clients and MCP).
    Keys {
        #[command(subcommand)]
        command: keys::KeysCommand,
        #[command(flatten)]
        database: DatabaseSettings,
    },
    /// Manage users' workspaces (create, list, rename, delete), as an operator acting for a user.
    Workspaces {
        #[command(subcommand)]
        command: workspaces::WorkspacesCommand,
        #[command(flatten)]
        settings: workspaces::WorkspacesSettings,
    },
    /// Folders and S3 prefixes a workspace follows: new files become documents, changed files new revisions,
    /// removed files are deleted (docs/sources.md).
    Sources {
        #[command(subcommand)]
        command: sources::SourcesCommand,
        #[command(flatten)]
        settings: sources::SourcesCommandSettings,
    },
    /// Rebuild the read models by replaying every topic.
    Rebuild {
        #[command(subcommand)]
        command: rebuild::RebuildCommand,
        #[command(flatten)]
        settings: Settings,
    },
    /// Replay retained events into new read models (re-chunking).
    Replay {
        #[command(subcommand)]
        command: replay::ReplayCommand,
        #[command(flatten)]
        settings: Settings,
    },
    /// Dead letters: list, show, redrive.
    Dlq {
        #[command(subcommand)]
        command: dlq::DlqCommand,
        #[command(flatten)]
        settings: Settings,
    },
    /// Check the log against the read models: no position past a log end, no document or question stuck (exit 1 if any; --repair re-drives them).
    Verify {
        #[command(flatten)]
        args: verify::VerifyArgs,
        #[command(flatten)]
        settings: Settings,
    },
}

fn main() -> ExitCode {
    // A parse worker (started by the parser stage with this argument)
    // needs none of the settings, logs or runtime below.
    if std::env::args_os().nth(1).is_some_and(|a| a == rag_stages::parse_worker::WORKER_ARG) {
        return ExitCode::from(u8::try_from(rag_stages::parse_worker::serve()).unwrap_or(1));
    }
    let cli = Cli::parse();
    let json_logs = cli.log_format == LogFormat::Json;
    if let Err(e) = rag_telemetry::init_logs(json_logs) {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Run { args, settings } => run::run(&settings, args).await,
            Command::Migrate { database } => setup::migrate(&database).await,
            Command::Init { settings } => setup::init(&settings).await,
            Command::Topics { command, kafka } => setup::topics(&kafka, command).await,
            Command::Upload { args, settings } => upload::upload(&settings, args).await,
            Command::Docs { command, settings } => docs::docs(&settings, command).await,
            Command::Search { args, settings } => search::search(&settings, args).await,
            Command::Ask { args, settings } => ask::ask(&settings, args).await,
            Command::Token { args, jwt } => token::token(&jwt, args),
            Command::Keys { command, database } => keys::keys(&database, command).await,
            Command::Workspaces { command, settings } => workspaces::workspaces(&settings, command).await,
            Command::Sources { command, settings } => sources::sources(&settings, command).await,
            Command::Dlq { command, settings } => dlq::dlq(&settings, command).await,
            Command::Replay { command, settings } => replay::replay(&settings, command).await,
            Command::Rebuild { command, settings } => rebuild::rebuild(&settings, command).await,
            Command::Verify { args, settings } => verify::verify(&settings, args).await,
        }
    });
    // Work still on the blocking pool (a stage's leave of its group, a lag
    // report, waiting on a broker that does not answer) is not waited for:
    // what had to be durable is, and a stage stopping gave up on it already.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
