use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use rag_bus::{BusConfig, EventProducer, Stage, StageOutput};
use rag_events::Codec;
use rag_stages::{answerer, chunker, failpoint::Failpoint, indexer, parser, projector, PgOffsets};
use rag_telemetry::InternalEvent;
use tokio_util::sync::CancellationToken;
use tracing::{error, info};

use crate::config::Settings;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StageName {
    /// Every stage below and the HTTP API, in one process.
    All,
    /// DocumentUploaded -> DocumentParsed.
    Parser,
    /// DocumentParsed -> DocumentChunked (CHUNKING_PROFILE).
    Chunker,
    /// DocumentChunked -> search index -> DocumentIngested.
    Indexer,
    /// All events -> Postgres read models.
    Projector,
    /// QuestionAsked -> retrieval + answer with citations -> AnswerProduced.
    Answerer,
    /// The HTTP API on API_ADDR (no stage).
    Api,
}

pub type StageTasks = tokio::task::JoinSet<(String, Result<(), rag_bus::BusError>)>;

/// Runs `stage` as a task of `tasks` until `shutdown`; `dlq` produces its dead letters.
pub fn spawn_stage<S: Stage>(tasks: &mut StageTasks, bus: &BusConfig, dlq: &EventProducer, stage: S, shutdown: &CancellationToken) {
    let (bus, shutdown, stage, dlq) = (bus.clone(), shutdown.clone(), Arc::new(stage), dlq.clone());
    let name = stage.identity().name.to_string();
    tasks.spawn(async move { (name, rag_bus::stage::run_stage(&bus, stage, dlq, shutdown).await) });
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

/// Starts the chosen stages as tasks of this process.
pub async fn start_stages(
    s: &Settings,
    which: StageName,
    pool: &rag_store::sqlx::PgPool,
    shutdown: &CancellationToken,
) -> anyhow::Result<StageTasks> {
    let bus = s.bus();
    let codec = Codec::embedded()?;
    let topics = s.topics();
    let blobs = rag_blobs::BlobStore::new(&s.blobs());
    let mut tasks: StageTasks = tokio::task::JoinSet::new();
    let wants = |stage: StageName| which == StageName::All || which == stage;
    // One embedder (one copy of a local model) for the indexer and the answerer.
    let shared_embedder = if wants(StageName::Indexer) || wants(StageName::Answerer) { Some(s.embedder()?) } else { None };
    let embedder = if wants(StageName::Indexer) { shared_embedder.clone() } else { None };
    let answer_llm = if wants(StageName::Answerer) { s.answer_llm()? } else { None };
    if let Some((model, dimension)) = embedder.as_ref().and_then(|e| e.identity()) {
        rag_store::pipeline::ensure_vector_index(pool, model, dimension).await.context("creating the vector index")?;
    }
    let counter = if wants(StageName::Chunker) { Some(s.embedding.token_counter()?) } else { None };
    let ocr = if wants(StageName::Parser) { s.parsing.ocr() } else { None };
    let parse_workers = if wants(StageName::Parser) { s.parsing.parse_workers()? } else { None };
    if wants(StageName::Projector) {
        let (pool, stop) = (pool.clone(), shutdown.clone());
        let (after, every) =
            (Duration::from_secs(s.stages.stuck_after_secs.max(1)), Duration::from_secs(s.stages.lag_interval_secs.max(1)));
        tasks.spawn(async move {
            rag_stages::stuck::watch(pool, after, every, stop).await;
            ("stuck-watch".to_string(), Ok(()))
        });
    }
    if let (true, Some(after)) = (wants(StageName::Projector), s.sources.uncited_revisions_kept_for()) {
        let (pool, stop) = (pool.clone(), shutdown.clone());
        tasks.spawn(async move {
            retain_revisions(pool, after, stop).await;
            ("revision-retention".to_string(), Ok(()))
        });
    }
    if which == StageName::All && s.sources.source_sync_interval_secs > 0 {
        let syncer = rag_sources::Syncer {
            pool: pool.clone(),
            places: rag_sources::SyncPlaces {
                folder_roots: s.sources.folder_roots(),
                buckets: s.sources.buckets(),
                own_bucket: s.blobs.s3_bucket.clone(),
            },
            blobs: blobs.clone(),
            producer: EventProducer::new(&bus, codec.clone(), "rag-engine/sources")?,
            limits: rag_sources::SyncLimits { max_bytes: s.uploads.upload_max_bytes, workspace_max_bytes: s.uploads.workspace_max_bytes },
            producer_name: format!("rag-engine/sources@{}", env!("CARGO_PKG_VERSION")),
        };
        let (every, stop) = (Duration::from_secs(s.sources.source_sync_interval_secs), shutdown.clone());
        tasks.spawn(async move {
            sync_sources(syncer, every, stop).await;
            ("source-sync".to_string(), Ok(()))
        });
    }
    // One producer for every stage's output and dead letters: each
    // librdkafka client costs threads and idle wake-ups, and ordering is
    // per partition whichever handle produces.
    let producer = EventProducer::new(&bus, codec.clone(), "rag-engine/stages")?;
    // Several members of one consumer group in this process: the group
    // splits the partitions among them, exactly as across machines.
    for _ in 0..s.stages.stage_instances.max(1) {
        if wants(StageName::Parser) {
            let output = StageOutput::new(producer.clone(), parser::STAGE);
            let p = parser::Parser {
                blobs: blobs.clone(),
                output,
                limits: s.parsing.parse_limits(),
                ocr: ocr.clone(),
                workers: parse_workers.clone(),
                pool: pool.clone(),
                max_attempts: s.parsing.parser_max_attempts,
                shutdown: shutdown.clone(),
            };
            spawn_stage(&mut tasks, &bus, &producer, p, shutdown);
        }
        if let Some(counter) = &counter {
            let output = StageOutput::new(producer.clone(), chunker::STAGE);
            let c = chunker::Chunker { blobs: blobs.clone(), output, profile: s.parsing.chunking_profile()?, counter: counter.clone() };
            spawn_stage(&mut tasks, &bus, &producer, c, shutdown);
        }
        if let Some(embedder) = &embedder {
            let i = indexer::Indexer {
                blobs: blobs.clone(),
                output: StageOutput::new(producer.clone(), indexer::STAGE),
                offsets: PgOffsets::new(pool.clone(), bus.group_of(indexer::GROUP)),
                failpoint: Failpoint::from_env(),
                embedder: embedder.clone(),
                emit: true,
            };
            spawn_stage(&mut tasks, &bus, &producer, i, shutdown);
        }
        if let (true, Some(embedder)) = (wants(StageName::Answerer), &shared_embedder) {
            let a = answerer::Answerer {
                retriever: s.retrieval.retriever_with(&s.embedding, pool.clone(), embedder.clone())?,
                llm: answer_llm.clone(),
                top_k: s.retrieval.retrieval_top_k.max(1),
                options: rag_answer::AnswerOptions {
                    fallback: s.answers.answer_fallback(),
                    evidence_chars: s.answers.evidence_chars(),
                    verify: s.answers.answer_verify,
                    thresholds: s.answers.abstain_thresholds()?,
                    // Set per question part by the answerer.
                    part_of_several: false,
                    without_marks: false,
                    decision: s.answers.answer_decision_weights.0,
                    // Set per question from what retrieval found.
                    retrieval: rag_answer::RetrievalConfidence::default(),
                    // Set per question by the evidence cutoff.
                    llm_chunks: usize::MAX,
                    evidence_sentences: s.answers.answer_evidence_sentences,
                    second_attempt: s.answers.answer_second_look,
                    cite_support: s.answers.answer_cite_support,
                    instruction_filter: s.answers.answer_instruction_filter.into(),
                },
                evidence_cutoff: s.answers.answer_evidence_cutoff,
                output: StageOutput::new(producer.clone(), answerer::STAGE),
            };
            spawn_stage(&mut tasks, &bus, &producer, a, shutdown);
        }
        if wants(StageName::Projector) {
            let group = bus.group_of(projector::GROUP);
            let p = projector::Projector::new(pool.clone(), blobs.clone(), codec.clone(), topics.clone(), group);
            spawn_stage(&mut tasks, &bus, &producer, p, shutdown);
        }
    }
    Ok(tasks)
}

/// Serves the HTTP API and the web page on `listener` as a task of `tasks`.
pub fn start_api(
    s: &Settings,
    jwt: rag_api::JwtAuth,
    listener: tokio::net::TcpListener,
    pool: &rag_store::sqlx::PgPool,
    shutdown: &CancellationToken,
    tasks: &mut StageTasks,
) -> anyhow::Result<()> {
    let timeout = Duration::from_secs(s.api.api_produce_timeout_secs.max(1));
    let producer = EventProducer::with_delivery_timeout(&s.bus(), Codec::embedded()?, "rag-engine/api", timeout)?;
    let blobs = rag_blobs::BlobStore::new(&s.blobs());
    // The MCP `search` tool searches as the answerer retrieves.
    let search = crate::search::RetrieverSearch(s.retriever(pool.clone()).context("the retriever of the MCP search tool")?);
    let state =
        rag_api::AppState::new(pool.clone(), producer, blobs, jwt, s.api(), shutdown.clone()).with_search(std::sync::Arc::new(search));
    let local = listener.local_addr().context("the API listener's address")?;
    // Password-less sign-in is for a developer's own machine: never on an
    // address other machines can reach.
    if s.api.api_dev_sign_in && !local.ip().is_loopback() {
        anyhow::bail!("API_DEV_SIGN_IN=true mints a token for any user name without a password: refused while the API listens on {local}, beyond loopback");
    }
    let addr = local.to_string();
    info!(addr = %addr, page = %format!("http://{addr}/"), "serving the HTTP API and the web page");
    if s.api.api_dev_sign_in {
        tracing::warn!("API_DEV_SIGN_IN is on: POST /dev/sign-in gives a token for any user name (a developer's machine only)");
    }
    tasks.spawn(async move {
        let r = rag_api::serve(listener, state).await;
        ("api".to_string(), r.map_err(|e| rag_bus::BusError::StageFailed { stage: "api".into(), reason: e.to_string() }))
    });
    Ok(())
}

/// Drops, every five minutes, the text of superseded revisions no answer
/// cites (`REVISION_RETENTION=cited`), once they have been superseded for
/// `after`.
async fn retain_revisions(pool: rag_store::sqlx::PgPool, after: Duration, stop: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_secs(300));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        match rag_store::revisions::prune_uncited(&pool, after).await {
            Ok(0) => {}
            Ok(n) => info!(segments = n, "superseded revisions no answer cites dropped (REVISION_RETENTION=cited)"),
            Err(e) => tracing::warn!(error = %e, "dropping superseded revisions"),
        }
    }
}

/// Syncs every source each `every` until `stop`. A sync cut short by the
/// stop (or by a failure) leaves its checkpoint consistent: the next one
/// goes on from there (`rag_sources::sync`).
async fn sync_sources(syncer: rag_sources::Syncer, every: Duration, stop: CancellationToken) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The gauges exist from the start, at zero until the first pass.
    rag_telemetry::events::SourcesObserved { sources: &[] }.emit();
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let all = match rag_store::sources::list(&syncer.pool, None).await {
            Ok(all) => all,
            Err(e) => {
                tracing::warn!(error = %e, "listing the sources to sync");
                continue;
            }
        };
        for source in all {
            // Files still to announce in this sync, as it goes.
            let progress = |p: rag_sources::sync::Progress<'_>| {
                if let rag_sources::sync::Progress::File { done, of, .. } = p {
                    rag_telemetry::events::SourceFilesPending { files: of - done }.emit();
                }
            };
            tokio::select! {
                _ = stop.cancelled() => return,
                r = syncer.sync(&source, &progress) => if let Err(e) = r {
                    tracing::warn!(workspace_id = %source.workspace_id, source_id = %source.id, error = %e, "source sync stopped");
                },
            }
        }
        match rag_store::sources::observe(&syncer.pool).await {
            Ok(observed) => {
                let sources: Vec<_> =
                    observed.iter().map(|o| (o.source.to_string(), o.seen, o.present, o.failed, o.pending, o.sync_age_secs)).collect();
                rag_telemetry::events::SourcesObserved { sources: &sources }.emit();
            }
            Err(e) => tracing::warn!(error = %e, "reading what the sources have seen"),
        }
    }
}

pub async fn run(s: &Settings, args: RunArgs) -> anyhow::Result<ExitCode> {
    // Served on METRICS_ADDR by the exporter itself; the handle is not needed.
    let _metrics = rag_telemetry::install_metrics(s.stages.metrics_addr)?;
    info!(metrics = %s.stages.metrics_addr, "serving /metrics");
    let with_api = matches!(args.stage, StageName::All | StageName::Api);
    // Fail fast on what the API needs before anything starts.
    let (jwt, listener) = if with_api {
        let jwt = s.jwt()?;
        let listener =
            tokio::net::TcpListener::bind(s.api.api_addr).await.with_context(|| format!("binding API_ADDR {}", s.api.api_addr))?;
        (Some(jwt), Some(listener))
    } else {
        (None, None)
    };
    rag_bus::admin::ensure_topics(&s.bus()).await.context("ensuring topics (KAFKA_BROKERS)")?;
    let pool = rag_store::connect(&s.store()).await.context("connecting to Postgres (DATABASE_URL)")?;
    rag_store::migrate(&pool).await.context("applying migrations")?;
    let shutdown = CancellationToken::new();
    let mut tasks = start_stages(s, args.stage, &pool, &shutdown).await?;
    if let (Some(jwt), Some(listener)) = (jwt, listener) {
        start_api(s, jwt, listener, &pool, &shutdown, &mut tasks)?;
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
