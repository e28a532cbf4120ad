//! `tansu broker` as `scripts/stack` runs it, without the rest of tansu's
//! CLI: the same options, environment variables and defaults as tansu-cli
//! 0.6.0's `broker` command (src/cli/broker.rs), less the ones the stack
//! never uses (schema registry, data lakes, TLS, SASL authentication).
//! `tansu broker --listener-url tcp://127.0.0.1:19092
//! --advertised-listener-url tcp://127.0.0.1:19092 --storage-engine
//! sqlite://tansu.db`; the `broker` word is optional, as in tansu.

use clap::{Parser, Subcommand};
use tansu_broker::{EnvVarExp, NODE_ID, TracingFormat, broker::Broker, coordinator::group::administrator::Controller, otel};
use tansu_sans_io::ErrorCode;
use tansu_storage::StorageContainer;
use tokio::time::Instant;
use tracing::{debug, error};
use url::Url;
use uuid::Uuid;

#[derive(Debug, Parser)]
#[command(
    name = "tansu",
    version,
    about = "tansu's Kafka-compatible broker, sqlite storage (rag-engine's local stack)",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    #[command(flatten)]
    broker: Arg,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The Kafka-compatible broker [default if no command supplied]
    Broker(Box<Arg>),
}

#[derive(Debug, Clone, clap::Args)]
struct Arg {
    /// All members of the same cluster should use the same id
    #[arg(long, env = "CLUSTER_ID", default_value = "tansu_cluster", visible_alias = "kafka-cluster-id")]
    cluster_id: String,

    /// The broker will listen on this address
    #[arg(long, env = "LISTENER_URL", default_value = "tcp://0.0.0.0:9092", visible_alias = "kafka-listener-url")]
    listener_url: EnvVarExp<Url>,

    /// This location is advertised to clients in metadata
    #[arg(long, env = "ADVERTISED_LISTENER_URL", default_value = "tcp://localhost:9092", visible_alias = "kafka-advertised-listener-url")]
    advertised_listener_url: EnvVarExp<Url>,

    /// Storage engine: sqlite://FILE (memory://tansu/ also works)
    #[arg(long, env = "STORAGE_ENGINE", default_value = "memory://tansu/")]
    storage_engine: EnvVarExp<Url>,

    /// OTEL Exporter OTLP endpoint
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    otlp_endpoint_url: Option<EnvVarExp<Url>>,

    /// Silent
    #[arg(long)]
    silent: bool,
}

async fn run(arg: Arg) -> tansu_broker::Result<ErrorCode> {
    let started = Instant::now();
    let listener = arg.listener_url.into_inner();
    let advertised_listener = arg.advertised_listener_url.into_inner();
    let storage_engine = arg.storage_engine.into_inner();
    if !arg.silent {
        println!("tansu broker {} (rag-engine's build: sqlite storage)", env!("CARGO_PKG_VERSION"));
        println!("listening on: {listener} (advertised: {advertised_listener})");
        let mut shown = storage_engine.clone();
        let _ = shown.set_password(None);
        println!("storage: {shown}");
    }
    Broker::<Controller<StorageContainer>, StorageContainer>::builder()
        .node_id(NODE_ID)
        .cluster_id(arg.cluster_id)
        .incarnation_id(Uuid::now_v7())
        .advertised_listener(advertised_listener)
        .otlp_endpoint_url(arg.otlp_endpoint_url.map(EnvVarExp::into_inner))
        .schema_registry(None)
        .storage(storage_engine)
        .listener(listener)
        .authentication(false)
        .tls_server_config(None)
        .silent(arg.silent)
        .build()
        .await?
        .main(started)
        .await
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let _guard = match otel::init(TracingFormat::Text) {
        Ok(guard) => guard,
        Err(err) => {
            eprintln!("tracing: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let cli = Cli::parse();
    let arg = match cli.command {
        Some(Command::Broker(arg)) => *arg,
        None => cli.broker,
    };
    match run(arg).await {
        Ok(ErrorCode::None) => {
            debug!("{}", ErrorCode::None);
            std::process::ExitCode::SUCCESS
        }
        Ok(code) => {
            error!("{code}");
            std::process::ExitCode::FAILURE
        }
        Err(err) => {
            error!("{err}");
            std::process::ExitCode::FAILURE
        }
    }
}
