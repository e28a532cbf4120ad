//! `rag-engine rebuild read-models`: drops the read models the topics
//! determine and rebuilds them by replaying every topic from the start, in
//! causal phases (uploads and deletions, parses, chunks and the search
//! index, ingestions, questions, answers), up to the topics' ends as of the
//! start. The projector and indexer run in this process under their usual
//! consumer groups, so `rag-engine run` resumes right after the rebuild.
//! Workspaces and conversations are source tables (written by the API) and
//! stay; consumer offsets of the projector and indexer are reset.

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rag_bus::{EventProducer, StageOutput};
use rag_events::{Codec, EventType};
use rag_stages::{indexer, projector, PgOffsets};
use tokio_util::sync::CancellationToken;

use rag_app::config::Settings;

/// What the rebuild empties: everything a replay of the topics rewrites.
pub use rag_store::operations::READ_MODEL_TABLES;

#[derive(Subcommand, Debug)]
pub enum RebuildCommand {
    /// Drop the read models and rebuild them by replaying every topic (stop every `rag-engine run` first).
    ReadModels(ReadModelsArgs),
}

#[derive(Args, Debug)]
pub struct ReadModelsArgs {
    /// Confirm: the read models are emptied before the replay.
    #[arg(long)]
    yes: bool,
    /// Seconds the whole rebuild may take.
    #[arg(long, default_value_t = 7200)]
    timeout: u64,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

struct Phase {
    name: &'static str,
    events: &'static [EventType],
    with_indexer: bool,
}

const PHASES: &[Phase] = &[
    Phase { name: "uploads and deletions", events: &[EventType::DocumentUploaded, EventType::DocumentDeleted], with_indexer: false },
    Phase { name: "parses", events: &[EventType::DocumentParsed], with_indexer: false },
    Phase { name: "chunks and search index", events: &[EventType::DocumentChunked], with_indexer: true },
    Phase { name: "ingestions", events: &[EventType::DocumentIngested], with_indexer: false },
    // Questions before answers: the assistant message keeps the question's time.
    Phase { name: "questions", events: &[EventType::QuestionAsked], with_indexer: false },
    Phase { name: "answers", events: &[EventType::AnswerProduced], with_indexer: false },
];

pub async fn rebuild(s: &Settings, cmd: RebuildCommand) -> anyhow::Result<ExitCode> {
    let RebuildCommand::ReadModels(args) = cmd;
    if !args.yes {
        anyhow::bail!(
            "this empties {} and replays every topic into them; stop every `rag-engine run` (projector, indexer) first, then pass --yes",
            READ_MODEL_TABLES.join(", ")
        );
    }
    let started = Instant::now();
    let bus = s.bus();
    let codec = Codec::embedded()?;
    let topics = s.topics();
    let pool = rag_store::connect(&s.store()).await.context("connecting to Postgres (DATABASE_URL)")?;
    rag_store::migrate(&pool).await?;
    let (projector_group, indexer_group) = (bus.group_of(projector::GROUP), bus.group_of(indexer::GROUP));
    for group in [&projector_group, &indexer_group] {
        match rag_bus::admin::group_members(&bus, group).await {
            Ok(members) if !members.is_empty() => {
                anyhow::bail!("consumer group {group} has {} active member(s): stop `rag-engine run` before rebuilding", members.len())
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(group = %group, error = %e, "could not list the group's members; make sure no `rag-engine run` is running")
            }
        }
    }
    // The replay's end: every topic as of now.
    let mut ends: HashMap<(String, i32), i64> = HashMap::new();
    for event in EventType::ALL {
        let topic = topics.of(event);
        for (partition, low, high) in rag_bus::admin::watermarks(&bus, &topic).await.with_context(|| format!("reading {topic}"))? {
            if high > low {
                ends.insert((topic.clone(), partition), high);
            }
        }
    }
    let embedder = s.embedder()?;
    if let Some((model, dimension)) = embedder.identity() {
        rag_store::pipeline::ensure_vector_index(&pool, model, dimension).await?;
    }
    rag_store::operations::reset_read_models(&pool, &[projector_group.clone(), indexer_group.clone()]).await?;
    let all_topics: Vec<String> = EventType::ALL.iter().map(|e| topics.of(*e)).collect();
    for group in [&projector_group, &indexer_group] {
        rag_bus::admin::rewind_group(&bus, group, &all_topics).await.with_context(|| format!("rewinding consumer group {group}"))?;
    }

    let events_on = |topic: &str| -> i64 { ends.iter().filter(|((t, _), _)| t == topic).map(|(_, n)| *n).sum() };
    let work = |events: &[EventType], with_indexer: bool| -> i64 {
        let projected: i64 = events.iter().map(|e| events_on(&topics.of(*e))).sum();
        projected + if with_indexer { events_on(&topics.of(EventType::DocumentChunked)) } else { 0 }
    };
    let total: i64 = PHASES.iter().map(|p| work(p.events, p.with_indexer)).sum();
    let bar = ProgressBar::new(total.max(0) as u64);
    if args.json {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} events  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let deadline = Instant::now() + Duration::from_secs(args.timeout);
    let mut done_before = 0i64;
    for phase in PHASES {
        let wanted = work(phase.events, phase.with_indexer);
        if wanted == 0 {
            continue;
        }
        bar.set_message(phase.name);
        let shutdown = CancellationToken::new();
        let mut tasks = tokio::task::JoinSet::new();
        let phase_topics: Vec<String> = phase.events.iter().map(|e| topics.of(*e)).collect();
        let dlq = EventProducer::new(&bus, codec.clone(), "rag-engine/rebuild-dlq")?;
        let p = projector::Projector::new(
            pool.clone(),
            rag_blobs::BlobStore::new(&s.blobs()),
            codec.clone(),
            topics.clone(),
            projector_group.clone(),
        );
        let p = p.consuming(phase.events);
        {
            let (bus, shutdown, dlq) = (bus.clone(), shutdown.clone(), dlq.clone());
            tasks.spawn(async move { rag_bus::stage::run_stage(&bus, Arc::new(p), dlq, shutdown).await });
        }
        let mut watched = vec![(projector_group.clone(), phase_topics.clone())];
        if phase.with_indexer {
            let i = indexer::Indexer {
                blobs: rag_blobs::BlobStore::new(&s.blobs()),
                output: StageOutput::new(EventProducer::new(&bus, codec.clone(), "rag-engine/rebuild")?, indexer::STAGE),
                offsets: PgOffsets::new(pool.clone(), indexer_group.clone()),
                failpoint: None,
                embedder: embedder.clone(),
                emit: false,
            };
            let chunked = vec![topics.of(EventType::DocumentChunked)];
            let (bus, shutdown) = (bus.clone(), shutdown.clone());
            tasks.spawn(async move { rag_bus::stage::run_stage(&bus, Arc::new(i), dlq, shutdown).await });
            watched.push((indexer_group.clone(), chunked));
        }
        loop {
            let groups: Vec<String> = watched.iter().map(|(g, _)| g.clone()).collect();
            let stored = rag_store::offsets::list_groups(&pool, &groups).await?;
            let mut done = 0i64;
            let mut complete = true;
            for (group, group_topics) in &watched {
                for ((topic, partition), end) in ends.iter().filter(|((t, _), _)| group_topics.contains(t)) {
                    let next =
                        stored.iter().find(|(g, t, p, _)| g == group && t == topic && p == partition).map(|(_, _, _, n)| *n).unwrap_or(0);
                    done += next.min(*end);
                    complete &= next >= *end;
                }
            }
            bar.set_position((done_before + done) as u64);
            if complete {
                break;
            }
            if let Some(finished) = tasks.try_join_next() {
                anyhow::bail!("a stage of the rebuild stopped during {}: {:?}", phase.name, finished);
            }
            if Instant::now() > deadline {
                anyhow::bail!("the rebuild did not finish within {} s (phase {})", args.timeout, phase.name);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        shutdown.cancel();
        while let Some(joined) = tasks.join_next().await {
            if let Ok(Err(e)) = joined {
                anyhow::bail!("a stage of the rebuild failed during {}: {e}", phase.name);
            }
        }
        done_before += wanted;
        if !args.json {
            bar.suspend(|| eprintln!("rebuilt from {}: {wanted} events", phase.name));
        }
    }
    bar.finish_and_clear();
    // Retention as the running system applies it: the replay brought back
    // the text of superseded revisions no answer cites.
    if let Some(after) = s.sources.uncited_revisions_kept_for() {
        rag_store::revisions::prune_uncited(&pool, after).await?;
    }
    let mut rows = serde_json::Map::new();
    for (table, n) in rag_store::operations::read_model_rows(&pool).await? {
        rows.insert(table.to_string(), n.into());
    }
    let seconds = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({"events": total, "rows": rows, "duration_seconds": seconds}))?);
    } else {
        let listing: Vec<String> = rows.iter().map(|(t, n)| format!("{t} {n}")).collect();
        println!("rebuilt the read models from {total} events in {seconds:.1} s: {}", listing.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}
