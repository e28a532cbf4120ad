//! `rag-dev`: benchmarks, the chaos harness and quality evaluations on the
//! local stack (development only; the product binary is `rag-engine`).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use rag_app::config::{LogFormat, Settings};
use rag_devtools::{bench, chaos, eval};

#[derive(Parser, Debug)]
#[command(
    name = "rag-dev",
    version,
    about = "rag-engine's development tools: benchmarks, fault injection, quality evaluations (on the local stack)",
    after_help = "Every command that prints data takes --json. Exit status is non-zero on failure.",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log format on stderr: text or json.
    #[arg(long, env = "LOG_FORMAT", default_value = "text", global = true)]
    log_format: LogFormat,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Benchmarks on the real stack: every part and its goal, or one part (prints numbers; never a test).
    Bench {
        #[command(flatten)]
        args: bench::BenchArgs,
        #[command(flatten)]
        settings: Settings,
    },
    /// Quality evaluations on the real stack.
    Eval {
        #[command(subcommand)]
        command: eval::EvalCommand,
        #[command(flatten)]
        settings: Settings,
    },
    /// Fault injection on the local stack (kills stages, restarts services), then invariant checks; prints a JSON summary.
    Chaos {
        #[command(flatten)]
        args: chaos::ChaosArgs,
        #[command(flatten)]
        settings: Settings,
    },
}

fn main() -> ExitCode {
    // The in-process ingest harness's parser starts parse workers from this
    // executable (PARSER_WORKER_EXE unset), as `rag-engine` does.
    if std::env::args_os().nth(1).is_some_and(|a| a == rag_stages::parse_worker::WORKER_ARG) {
        return ExitCode::from(u8::try_from(rag_stages::parse_worker::serve()).unwrap_or(1));
    }
    let cli = Cli::parse();
    if let Err(e) = rag_telemetry::init_logs(cli.log_format == LogFormat::Json) {
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
            Command::Bench { args, settings } => bench::bench(&settings, args).await,
            Command::Eval { command, settings } => eval::eval(&settings, command).await,
            Command::Chaos { args, settings } => chaos::chaos(&settings, args).await,
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
