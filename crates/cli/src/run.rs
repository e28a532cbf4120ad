use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, ValueEnum};
use rag_bus::{EventProducer, StageSpec};
use rag_events::Codec;
use rag_stages::projector;
use tokio_util::sync::CancellationToken;
use tracing::{error, info};

use crate::config::Settings;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StageName {
    /// Every stage below, in one process.
    All,
    /// All events -> Postgres read models.
    Projector,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Which stage to run.
    #[arg(value_enum, default_value = "all")]
    stage: StageName,
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => info!("SIGTERM received, shutting down"),
                    _ = tokio::signal::ctrl_c() => info!("SIGINT received, shutting down"),
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

pub async fn run(s: &Settings, args: RunArgs) -> anyhow::Result<ExitCode> {
    rag_telemetry::install_metrics(s.metrics_addr)?;
    info!(metrics = %s.metrics_addr, "serving /metrics");
    let bus = s.bus();
    rag_bus::admin::ensure_topics(&bus).await.context("ensuring topics (KAFKA_BROKERS)")?;
    let pool = rag_store::connect(&s.store()).await.context("connecting to Postgres (DATABASE_URL)")?;
    rag_store::migrate(&pool).await.context("applying migrations")?;
    let codec = Codec::embedded()?;
    let topics = s.topics();
    let shutdown = CancellationToken::new();
    let mut tasks = tokio::task::JoinSet::new();

    let wants = |stage: StageName| args.stage == StageName::All || args.stage == stage;
    if wants(StageName::Projector) {
        let group = bus.group_of(projector::GROUP);
        let processor = Arc::new(projector::Projector::new(pool.clone(), codec.clone(), topics.clone(), group));
        let spec = StageSpec {
            name: projector::STAGE.to_string(),
            group: projector::GROUP.to_string(),
            topics: projector::CONSUMES.iter().map(|t| topics.of(*t)).collect(),
        };
        let dlq = EventProducer::new(&bus, codec.clone(), "rag-engine/projector")?;
        let (bus, shutdown) = (bus.clone(), shutdown.clone());
        tasks.spawn(async move {
            let r = rag_bus::stage::run_stage(&bus, &spec, processor, dlq, shutdown).await;
            (spec.name, r)
        });
    }

    let mut failed = false;
    tokio::select! {
        _ = wait_for_signal() => {}
        Some(joined) = tasks.join_next() => {
            // A stage ended on its own: that is a failure; stop the others.
            match joined {
                Ok((name, Err(e))) => error!(stage = %name, error = %e, "stage failed"),
                Ok((name, Ok(()))) => error!(stage = %name, "stage ended unexpectedly"),
                Err(e) => error!(error = %e, "stage task panicked"),
            }
            failed = true;
        }
    }
    shutdown.cancel();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((name, Err(e))) => {
                error!(stage = %name, error = %e, "stage failed");
                failed = true;
            }
            Ok((_, Ok(()))) => {}
            Err(e) => {
                error!(error = %e, "stage task panicked");
                failed = true;
            }
        }
    }
    pool.close().await;
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
