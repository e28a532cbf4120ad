//! `rag-engine`: runs the pipeline's stages and the operator/user commands
//! (the command line; everything else is in the `rag_engine` library).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use rag_engine::config::Settings;
use rag_engine::{ask, bench, chaos, dlq, docs, eval, rebuild, replay, run, search, setup, token, upload, verify};

const AFTER_HELP: &str = "\
Other environment variables:
  RUST_LOG              log filter (default: info,rdkafka=warn,sqlx=warn)
  RAG_ENGINE_FAILPOINT  testing only: <point>:<n> hangs the process at the n-th hit
                        of a failpoint so a test can kill it there

Every command that prints data takes --json. Exit status is non-zero on failure.";

#[derive(Parser, Debug)]
#[command(name = "rag-engine", version, about = "Explainable RAG on an event-sourced pipeline (Kafka, Postgres + pgvector, S3)",
          after_help = AFTER_HELP, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    settings: Settings,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run pipeline stages until SIGINT/SIGTERM (`all`: every stage in one process).
    Run(run::RunArgs),
    /// Apply the database migrations (embedded in the binary).
    Migrate,
    /// Create what the pipeline needs: topics, bucket, migrations. Idempotent.
    Init,
    /// Manage Kafka topics.
    #[command(subcommand)]
    Topics(setup::TopicsCommand),
    /// Store files (or whole directories) and produce DocumentUploaded for each.
    Upload(upload::UploadArgs),
    /// Inspect documents.
    #[command(subcommand)]
    Docs(docs::DocsCommand),
    /// Benchmarks on the real stack: every part and its goal, or one part (prints numbers; never a test).
    Bench(bench::BenchArgs),
    /// Ask a question; waits for the answer and prints it with numbered citations.
    Ask(ask::AskArgs),
    /// Search a workspace: ranked chunks with scores and positions.
    Search(search::SearchArgs),
    /// Quality evaluations on the real stack.
    #[command(subcommand)]
    Eval(eval::EvalCommand),
    /// Mint a bearer token for the HTTP API (signed with JWT_SECRET).
    Token(token::TokenArgs),
    /// Rebuild the read models by replaying every topic.
    #[command(subcommand)]
    Rebuild(rebuild::RebuildCommand),
    /// Replay retained events into new read models (re-chunking).
    #[command(subcommand)]
    Replay(replay::ReplayCommand),
    /// Dead letters: list, show, redrive.
    #[command(subcommand)]
    Dlq(dlq::DlqCommand),
    /// Fault injection on the local stack (kills stages, restarts services), then invariant checks; prints a JSON summary.
    Chaos(chaos::ChaosArgs),
    /// Check the log against the read models: no position past a log end, no document or question stuck (exit 1 if any; --repair re-drives them).
    Verify(verify::VerifyArgs),
}

fn main() -> ExitCode {
    // A parse worker (started by the parser stage with this argument)
    // needs none of the settings, logs or runtime below.
    if std::env::args_os().nth(1).is_some_and(|a| a == rag_stages::parse_worker::WORKER_ARG) {
        return ExitCode::from(u8::try_from(rag_stages::parse_worker::serve()).unwrap_or(1));
    }
    let cli = Cli::parse();
    let json_logs = cli.settings.log_format == rag_engine::config::LogFormat::Json;
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
        let s = &cli.settings;
        match cli.command {
            Command::Run(args) => run::run(s, args).await,
            Command::Migrate => setup::migrate(s).await,
            Command::Init => setup::init(s).await,
            Command::Topics(cmd) => setup::topics(s, cmd).await,
            Command::Upload(args) => upload::upload(s, args).await,
            Command::Docs(cmd) => docs::docs(s, cmd).await,
            Command::Bench(cmd) => bench::bench(s, cmd).await,
            Command::Search(args) => search::search(s, args).await,
            Command::Ask(args) => ask::ask(s, args).await,
            Command::Eval(cmd) => eval::eval(s, cmd).await,
            Command::Token(args) => token::token(s, args),
            Command::Dlq(cmd) => dlq::dlq(s, cmd).await,
            Command::Replay(cmd) => replay::replay(s, cmd).await,
            Command::Rebuild(cmd) => rebuild::rebuild(s, cmd).await,
            Command::Verify(args) => verify::verify(s, args).await,
            Command::Chaos(args) => chaos::chaos(s, args).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
