// Kept whole at ~460 lines: one chaos run, faults then invariants, in the order they happen.
//! `rag-dev chaos`: fault injection on the real local stack, then
//! invariant checks.
//!
//! Each trial gets its own database and topic prefix, runs every stage as
//! its own process (two parsers), uploads a mixed corpus (every format,
//! files that must fail, undecodable records), asks questions, and while
//! that is processed SIGKILLs or SIGTERMs a random stage process every few
//! seconds, restarts any stage that exits (as a supervisor would), and
//! restarts the broker, Postgres and the S3 server once each
//! (`scripts/stack restart`). The workspace also follows a folder of plain
//! files (`rag-engine sources sync`, itself one of the processes struck),
//! some of which change half way through. Then it waits for the pipeline to settle and
//! counts: every document in its expected terminal state with exactly the
//! rows its events give, every question answered once, the dead-letter
//! topic holding exactly the poison, and `rag-engine verify` clean.
//!
//! It restarts the shared local services: run nothing else against them
//! meanwhile (`scripts/test` runs it after the test suite).

mod checks;
pub mod corpus;
pub mod soak;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, ValueEnum};
use rag_bus::EventProducer;
use rag_events::{Codec, EventType};
use secrecy::ExposeSecret;
use serde_json::json;
use tokio::process::{Child, Command};

use rag_app::config::Settings;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Profile {
    /// About 100 documents and 10 questions, a fault every 3 s for 45 s.
    Short,
    /// 1,000 documents and 100 questions, a fault every 4 s for 180 s.
    Long,
    /// `--minutes` of steady use through every door of `run all`, faults on
    /// a schedule, figures sampled over time (`soak`).
    Soak,
}

#[derive(Args, Debug)]
pub struct ChaosArgs {
    #[arg(long, value_enum, default_value = "short")]
    profile: Profile,
    /// Independent trials, each on a fresh database and topics (short and long profiles).
    #[arg(long, default_value_t = 1)]
    trials: u32,
    /// The local stack script whose `restart kafka|postgres|s3` restarts the services.
    #[arg(long, default_value = "scripts/stack")]
    stack_script: PathBuf,
    /// Keep each trial's database (dropped after a clean trial by default).
    #[arg(long)]
    keep: bool,
    /// Only the JSON summary (on stdout, printed in any case); without it a
    /// closing count of clean trials also goes to stderr.
    #[arg(long)]
    json: bool,
    /// The soak's length in minutes (`--profile soak` only; 30 or more is also judged on growth and drift).
    #[arg(long, default_value_t = 60)]
    minutes: u64,
    /// Where the soak writes soak.json and soak.html.
    #[arg(long, default_value = "target/soak")]
    report: PathBuf,
    /// Only draw soak.html again from an earlier soak's soak.json (beside it).
    #[arg(long)]
    redraw: Option<PathBuf>,
}

struct Plan {
    documents: usize,
    /// Files of the followed folder, and how many of them change.
    synced: usize,
    edited: usize,
    questions: usize,
    poison: usize,
    fault_every: Duration,
    faults_for: Duration,
    settle: Duration,
}

impl Profile {
    /// A trial's plan; the soak has its own schedule.
    fn plan(self) -> Option<Plan> {
        Some(match self {
            Profile::Short => Plan {
                documents: 100,
                synced: 100,
                edited: 10,
                questions: 10,
                poison: 3,
                fault_every: Duration::from_secs(3),
                faults_for: Duration::from_secs(45),
                settle: Duration::from_secs(180),
            },
            Profile::Long => Plan {
                documents: 1000,
                synced: 1000,
                edited: 50,
                questions: 100,
                poison: 10,
                fault_every: Duration::from_secs(4),
                faults_for: Duration::from_secs(180),
                settle: Duration::from_secs(900),
            },
            Profile::Soak => return None,
        })
    }
}

const STAGES: [&str; 7] = ["parser", "parser", "chunker", "indexer", "projector", "answerer", SOURCES];

/// The member that runs `rag-engine sources sync` (every second).
const SOURCES: &str = "sources";

fn synced_key(i: usize) -> String {
    format!("tep-{i:04}.txt")
}

struct Member {
    stage: &'static str,
    child: Option<Child>,
    log: PathBuf,
}

/// The stage processes of one trial, supervised.
struct Fleet {
    exe: PathBuf,
    env: HashMap<String, String>,
    members: Vec<Member>,
    stage_restarts: u32,
}

impl Fleet {
    fn spawn(&self, stage: &str, log: &PathBuf) -> anyhow::Result<Child> {
        let out = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
        // The followed folder's syncer, struck like the stages.
        let args: [&str; 2] = if stage == SOURCES { ["sources", "sync"] } else { ["run", stage] };
        Ok(Command::new(&self.exe)
            .args(args)
            .envs(&self.env)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(out)
            .kill_on_drop(true)
            .spawn()?)
    }

    fn start_all(&mut self) -> anyhow::Result<()> {
        for i in 0..self.members.len() {
            let child = self.spawn(self.members[i].stage, &self.members[i].log)?;
            self.members[i].child = Some(child);
        }
        Ok(())
    }

    /// Restarts members that exited: killed by the harness, or stopped on
    /// their own (a stage stops when a dependency stays away past its
    /// retries). Counted in `stage_restarts`.
    fn supervise(&mut self) -> anyhow::Result<()> {
        for i in 0..self.members.len() {
            let exited = match self.members[i].child.as_mut() {
                None => true,
                Some(c) => c.try_wait()?.is_some(),
            };
            if exited {
                self.stage_restarts += u32::from(self.members[i].child.is_some());
                let child = self.spawn(self.members[i].stage, &self.members[i].log)?;
                self.members[i].child = Some(child);
            }
        }
        Ok(())
    }

    /// SIGKILL (or SIGTERM) one member; the supervisor restarts it.
    fn strike(&mut self, i: usize, kill: bool) {
        if let Some(child) = self.members[i].child.as_mut() {
            if let Some(pid) = child.id() {
                let signal = if kill { "-KILL" } else { "-TERM" };
                let _ = std::process::Command::new("kill").args([signal, &pid.to_string()]).status();
            }
        }
    }

    async fn stop_all(&mut self) {
        for m in &mut self.members {
            if let Some(pid) = m.child.as_ref().and_then(Child::id) {
                let _ = std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status();
            }
        }
        for m in &mut self.members {
            if let Some(mut c) = m.child.take() {
                if tokio::time::timeout(Duration::from_secs(30), c.wait()).await.is_err() {
                    let _ = c.kill().await;
                }
            }
        }
    }
}

pub async fn chaos(s: &Settings, args: ChaosArgs) -> anyhow::Result<ExitCode> {
    // SIGTERM or Ctrl-C drops the run, and with it every process it started
    // (each is killed when dropped): a harness stopped by hand or by a
    // timeout leaves no stage running to join the next run's consumer
    // groups.
    tokio::select! {
        result = run(s, args) => result,
        signal = stop_signal() => anyhow::bail!("stopped by {signal}: the run's processes were killed and its figures are incomplete"),
    }
}

/// The first SIGTERM or SIGINT; never, when they cannot be listened for.
async fn stop_signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    }
}

async fn run(s: &Settings, args: ChaosArgs) -> anyhow::Result<ExitCode> {
    let Some(plan) = args.profile.plan() else { return soak::run(s, &args).await };
    let mut trials = Vec::new();
    for trial in 1..=args.trials {
        // Progress goes to stderr also with --json (stdout carries only the
        // JSON): a long run stopped early still leaves each trial's figures.
        eprintln!("[chaos] trial {trial}/{}: {} documents, {} questions", args.trials, plan.documents, plan.questions);
        let summary = run_trial(s, &args, &plan, trial).await?;
        let ok = summary["ok"] == true;
        let f = &summary["faults"];
        eprintln!(
            "[chaos] trial {trial}: {} ({} SIGKILL, {} SIGTERM, {} stage restarts, services {}; {} s, settled in {} s)",
            if ok { "clean" } else { "INVARIANTS VIOLATED" },
            f["sigkill"],
            f["sigterm"],
            f["stage_restarts"],
            f["services_restarted"],
            summary["seconds"]["total"],
            summary["seconds"]["settle"]
        );
        if !ok {
            eprintln!("[chaos] trial {trial} report: {summary}");
        }
        trials.push(summary);
    }
    let clean = trials.iter().filter(|t| t["ok"] == true).count();
    let all_ok = clean == trials.len();
    if !args.json {
        eprintln!("[chaos] {clean} of {} trials clean", trials.len());
    }
    let out = json!({"profile": format!("{:?}", args.profile).to_lowercase(), "ok": all_ok, "trials": trials});
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

async fn run_trial(s: &Settings, args: &ChaosArgs, plan: &Plan, trial: u32) -> anyhow::Result<serde_json::Value> {
    let started = Instant::now();
    let id = uuid::Uuid::new_v4().simple().to_string();
    let prefix = format!("chaos{}.", &id[..10]);
    // The trial's own database, created and migrated on DATABASE_URL's server.
    let trial_db = rag_store::testing::TestDatabase::create_named(s.database.database_url.expose_secret(), "chaos")
        .await
        .context("creating the trial's database (DATABASE_URL)")?;
    let (db_name, trial_database_url, pool) = (trial_db.name.clone(), trial_db.url.clone(), trial_db.pool.clone());
    let mut ts = s.clone();
    ts.kafka.topic_prefix = prefix.clone();
    ts.database.database_url = trial_database_url.clone().into();
    let bus = ts.bus();
    rag_bus::admin::ensure_topics(&bus).await.context("creating the trial's topics")?;

    let workdir = std::env::temp_dir().join(format!("rag-chaos-{id}"));
    let corpus_dir = workdir.join("corpus");
    std::fs::create_dir_all(&corpus_dir)?;
    let files = corpus::files(plan.documents);
    for f in &files {
        std::fs::write(corpus_dir.join(&f.name), &f.bytes)?;
    }
    let followed = workdir.join("followed");
    let folder = followed.join("kho");
    std::fs::create_dir_all(&folder)?;
    for i in 0..plan.synced {
        std::fs::write(folder.join(synced_key(i)), format!("Tệp số {i}: mã kho K{i}.\n"))?;
    }
    let edited: Vec<usize> = (0..plan.edited).map(|k| k * plan.synced.max(1) / plan.edited.max(1)).collect();
    let env = member_env(&prefix, &trial_database_url, &followed, 1);
    let exe = crate::engine_exe()?;
    let members =
        STAGES.iter().enumerate().map(|(i, stage)| Member { stage, child: None, log: workdir.join(format!("{stage}-{i}.log")) }).collect();
    let mut fleet = Fleet { exe: exe.clone(), env: env.clone(), members, stage_restarts: 0 };
    fleet.start_all()?;

    // Poison first: undecodable records on the uploads topic.
    let producer = EventProducer::new(&bus, Codec::embedded()?, "rag-engine/chaos")?;
    let poison = produce_poison(&bus, &producer, plan.poison).await?;
    // The corpus, through the ordinary upload command.
    let workspace = format!("chaos-{}", &id[..8]);
    let upload = Command::new(&exe)
        .args(["upload", corpus_dir.to_str().unwrap_or_default(), "--workspace", &workspace, "--json"])
        .envs(&env)
        .stdin(Stdio::null())
        .output()
        .await?;
    anyhow::ensure!(upload.status.success(), "upload failed: {}", String::from_utf8_lossy(&upload.stderr));
    let uploaded: Vec<serde_json::Value> = serde_json::from_slice(&upload.stdout)?;
    let expected: HashMap<String, corpus::Expect> = uploaded
        .iter()
        .filter_map(|u| {
            let id = u["document_id"].as_str()?.to_string();
            let name = u["filename"].as_str()?;
            files.iter().find(|f| f.name == name).map(|f| (id, f.expect))
        })
        .collect();
    anyhow::ensure!(expected.len() == files.len(), "only {} of {} files were uploaded", expected.len(), files.len());
    // The followed folder: each file one document, ingested.
    let added = Command::new(&exe)
        .args(["sources", "add", "--workspace", &workspace, "--folder", folder.to_str().unwrap_or_default(), "--json"])
        .envs(&env)
        .stdin(Stdio::null())
        .output()
        .await?;
    anyhow::ensure!(added.status.success(), "sources add failed: {}", String::from_utf8_lossy(&added.stderr));
    let source: uuid::Uuid = serde_json::from_slice::<serde_json::Value>(&added.stdout)?["id"]
        .as_str()
        .and_then(|id| id.parse().ok())
        .context("sources add printed no id")?;
    let mut expected = expected;
    for i in 0..plan.synced {
        expected.insert(rag_sources::plan::document_id(source, &synced_key(i), 0).to_string(), corpus::Expect::Ingested);
    }
    let mut files_edited = false;

    // Faults, with questions asked along the way.
    // Seeded by the trial id (which the trial's log names); the faults'
    // moments still depend on timing.
    let mut dice = fastrand::Rng::with_seed(u64::from_str_radix(&id[..15], 16).unwrap_or(0x9e37_79b9));
    let (mut sigkills, mut sigterms) = (0u32, 0u32);
    let mut restarted: Vec<&str> = Vec::new();
    let mut questions = Vec::new();
    let fault_start = Instant::now();
    let mut next_fault = fault_start;
    while fault_start.elapsed() < plan.faults_for {
        fleet.supervise()?;
        let elapsed = fault_start.elapsed().as_secs_f64() / plan.faults_for.as_secs_f64();
        let due_questions = ((elapsed / 0.8).min(1.0) * plan.questions as f64) as usize;
        while questions.len() < due_questions {
            questions.push(ask(&producer, &workspace, questions.len()).await?);
        }
        if !files_edited && elapsed > 0.5 {
            for &i in &edited {
                std::fs::write(folder.join(synced_key(i)), format!("Tệp số {i} (đã sửa): mã kho mới M{i}.\n"))?;
            }
            files_edited = true;
        }
        let service = match restarted.len() {
            0 if elapsed > 0.25 => Some("kafka"),
            1 if elapsed > 0.5 => Some("postgres"),
            2 if elapsed > 0.75 => Some("s3"),
            _ => None,
        };
        if let Some(service) = service {
            let status = Command::new(&args.stack_script).args(["restart", service]).stdout(Stdio::null()).status().await?;
            anyhow::ensure!(status.success(), "`{} restart {service}` failed", args.stack_script.display());
            restarted.push(service);
        }
        if Instant::now() >= next_fault {
            let victim = dice.usize(..fleet.members.len().max(1));
            let kill = dice.usize(..4) != 0;
            fleet.strike(victim, kill);
            if kill {
                sigkills += 1
            } else {
                sigterms += 1
            }
            next_fault += plan.fault_every;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    while questions.len() < plan.questions {
        questions.push(ask(&producer, &workspace, questions.len()).await?);
    }

    // Settle: supervised, no more faults, until nothing is unfinished.
    let settle_start = Instant::now();
    loop {
        fleet.supervise()?;
        let (docs, msgs) = rag_store::audit::unfinished(&pool).await.unwrap_or((i64::MAX, i64::MAX));
        let answered = rag_store::audit::messages(&pool).await.map(|m| m.iter().filter(|(_, r, _)| r == "assistant").count()).unwrap_or(0);
        let projected = rag_store::audit::documents(&pool, None).await.map(|d| d.len()).unwrap_or(0);
        let synced = sources_settled(&pool, source, plan.synced, &edited).await;
        if docs == 0 && msgs == 0 && projected >= expected.len() && answered >= questions.len() && synced {
            // Give late duplicates (re-deliveries after the last kill) a moment.
            tokio::time::sleep(Duration::from_secs(3)).await;
            break;
        }
        if settle_start.elapsed() > plan.settle {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let settle_secs = settle_start.elapsed().as_secs_f64();
    let verify_out = Command::new(&exe).args(["verify", "--json"]).envs(&env).stdin(Stdio::null()).output().await?;
    fleet.stop_all().await;

    let verify: serde_json::Value = serde_json::from_slice(&verify_out.stdout).unwrap_or(json!({"clean": false}));
    let mut report = checks::check(&pool, &bus, &expected, &questions, checks::QuestionsKnown::All, &poison).await?;
    report["verify_clean"] = (verify["clean"] == true && verify_out.status.success()).into();
    report["sources"] = checks::sources(&pool, &workspace, source, plan.synced, &edited, synced_key).await?;
    let ok = report["ok"] == true && report["verify_clean"] == true && report["sources"]["ok"] == true;
    report["ok"] = ok.into();
    report["trial"] = trial.into();
    report["counts"] = json!({"documents": expected.len(), "questions": questions.len(), "poison": poison.len()});
    report["faults"] = json!({"sigkill": sigkills, "sigterm": sigterms, "stage_restarts": fleet.stage_restarts,
        "services_restarted": restarted});
    report["seconds"] = json!({"total": started.elapsed().as_secs_f64().round(), "settle": settle_secs.round()});
    report["database"] = db_name.clone().into();
    report["logs"] = workdir.display().to_string().into();
    if ok && !args.keep {
        trial_db.drop_database().await;
        let _ = std::fs::remove_dir_all(&workdir);
    } else {
        pool.close().await;
    }
    Ok(report)
}

/// Whether the followed folder's checkpoint holds every file announced and
/// confirmed, the edited ones in a second revision.
async fn sources_settled(pool: &rag_store::sqlx::PgPool, source: uuid::Uuid, files: usize, edited: &[usize]) -> bool {
    let Ok(rows) = rag_store::sources::files(pool, source).await else { return false };
    let confirmed = rows.iter().filter(|f| f.revision > 0 && f.pending_sha256.is_none()).count() == files;
    let edits_in = edited.iter().all(|&i| rows.iter().any(|f| f.key == synced_key(i) && f.revision >= 2));
    confirmed && edits_in
}

/// The environment of a run's processes: this one's, with the run's topic
/// prefix and database, a folder root to follow (synced every `sync_secs`),
/// a session timeout short enough that a killed member's partitions move on
/// quickly, and small pools (many processes share one Postgres).
fn member_env(prefix: &str, database_url: &str, followed_root: &std::path::Path, sync_secs: u32) -> HashMap<String, String> {
    let mut env: HashMap<String, String> = std::env::vars().collect();
    for (k, v) in [
        ("SOURCE_FOLDER_ROOTS", followed_root.display().to_string()),
        ("SOURCE_SYNC_INTERVAL_SECS", sync_secs.to_string()),
        ("TOPIC_PREFIX", prefix.to_string()),
        ("DATABASE_URL", database_url.to_string()),
        ("METRICS_ADDR", "127.0.0.1:0".into()),
        ("KAFKA_SESSION_TIMEOUT_MS", "6000".into()),
        ("DATABASE_MAX_CONNECTIONS", "4".into()),
        ("RUST_LOG", "info,rdkafka=warn,sqlx=warn".into()),
    ] {
        env.insert(k.to_string(), v);
    }
    env
}

/// `n` undecodable records on the uploads topic: the dead letters a run
/// expects, and the only ones. Their places (partition, offset).
async fn produce_poison(bus: &rag_bus::BusConfig, producer: &EventProducer, n: usize) -> anyhow::Result<Vec<(i32, i64)>> {
    let uploads_topic = bus.topics.of(EventType::DocumentUploaded);
    let mut poison = Vec::new();
    for i in 0..n {
        let d = producer.send_raw(&uploads_topic, Some(format!("poison-{i}").as_bytes()), b"\x00not avro at all", &[]).await?;
        poison.push((d.partition, d.offset));
    }
    Ok(poison)
}

/// Produces one QuestionAsked (as the API would); returns the assistant message id.
async fn ask(producer: &EventProducer, workspace: &str, n: usize) -> anyhow::Result<String> {
    const QUESTIONS: [&str; 4] = ["Doanh thu thay đổi bao nhiêu?", "Where is the badge office?", "Chi phí vận chuyển?", "Cổ tức quý 2?"];
    let question = QUESTIONS[n % QUESTIONS.len()].to_string();
    let asked = rag_asking::Ask::new(workspace, uuid::Uuid::now_v7(), question, "chaos", "rag-engine/chaos").asked();
    producer.send(&asked.event).await?;
    Ok(asked.assistant_message.to_string())
}
