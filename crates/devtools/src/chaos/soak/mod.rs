// Kept whole at ~540 lines: the run's schedule of load and faults, start to end; its clients, sampling and report are in the files beside it.
//! `rag-dev chaos --profile soak --minutes N`: hours of ordinary use with
//! faults on a schedule, through every door of a running `rag-engine run
//! all`, with its figures sampled over time and the invariants checked at
//! the end (docs/operations.md, "Soak").
//!
//! The run has its own database and topics. `run all` serves the API and
//! runs every stage; beside it one more process of each stage joins the
//! same consumer groups and is killed on a schedule (the supervisor starts
//! it again), and the broker, Postgres and the object store are restarted
//! in turn. `run all` itself is never struck: its memory, descriptors and
//! latencies over the run are what the soak measures. The answer model is
//! [`fake_llm`], so the run measures the service, not a model on two cores.

pub mod doors;
pub mod fake_llm;
pub mod figures;
mod folder;
mod plan;
pub mod report;

use std::collections::HashMap;
use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use rag_app::config::Settings;
use rag_bus::EventProducer;
use rag_events::Codec;
use secrecy::ExposeSecret;
use serde_json::json;
use tokio::process::{Child, Command};

use super::checks::QuestionsKnown;
use super::corpus::{self, Expect};
use super::{ChaosArgs, Fleet, Member};
use doors::{Doors, Reading};
use folder::{folder_check, folder_settled, Folder};
use plan::{hostile_check, hostile_files, more_formats, Arrivals, HostileUpload, Schedule, FOLLOW_UPS, QUESTIONS};
use report::{Fault, Sample, Windows};

/// `run all`'s Postgres application name.
const RUN_ALL_APPLICATION: &str = "rag-soak-run-all";

/// The stage processes struck beside `run all`.
const STRUCK: [&str; 5] = ["parser", "chunker", "indexer", "projector", "answerer"];

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

async fn wait_ready(http: &reqwest::Client, base: &str, within: Duration) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        if matches!(http.get(format!("{base}/readyz")).send().await, Ok(r) if r.status().is_success()) {
            return Ok(());
        }
        anyhow::ensure!(started.elapsed() < within, "run all's API did not become ready within {within:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn output(exe: &Path, env: &HashMap<String, String>, args: &[&str]) -> anyhow::Result<serde_json::Value> {
    let out = Command::new(exe).args(args).envs(env).stdin(Stdio::null()).output().await?;
    anyhow::ensure!(out.status.success(), "rag-engine {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(serde_json::from_str(text.trim()).unwrap_or(serde_json::Value::String(text.trim().to_string())))
}

/// Draws `soak.html` again beside an earlier run's `soak.json`, its
/// verdicts judged again from the samples and requests it holds (as this
/// version judges them).
pub fn redraw(json: &Path) -> anyhow::Result<ExitCode> {
    let mut data: report::RunData =
        serde_json::from_slice(&std::fs::read(json).with_context(|| format!("reading {}", json.display()))?).context("not a soak.json")?;
    let load = data.summary["seconds"]["load"].as_f64().unwrap_or(0.0);
    let verdicts = report::judge(&data.samples, &data.requests, &data.faults, Windows::of(load));
    for v in &verdicts {
        eprintln!("[soak] {} {}: {} (limit {})", if v.ok { "met" } else { "NOT MET" }, v.figure, v.measured, v.limit);
    }
    data.summary["verdicts"] = serde_json::to_value(verdicts)?;
    let page = json.with_file_name("soak.html");
    std::fs::write(&page, data.html())?;
    eprintln!("[soak] drew {}", page.display());
    Ok(ExitCode::SUCCESS)
}

pub async fn run(s: &Settings, args: &ChaosArgs) -> anyhow::Result<ExitCode> {
    if let Some(json) = &args.redraw {
        return redraw(json);
    }
    let plan = Schedule::of(args.minutes);
    let started = Instant::now();
    let id = uuid::Uuid::new_v4().simple().to_string();
    let prefix = format!("soak{}.", &id[..10]);
    let run_db = rag_store::testing::TestDatabase::create_named(s.database.database_url.expose_secret(), "soak")
        .await
        .context("creating the run's database (DATABASE_URL)")?;
    let pool = run_db.pool.clone();
    let mut ts = s.clone();
    ts.kafka.topic_prefix = prefix.clone();
    ts.database.database_url = run_db.url.clone().into();
    let bus = ts.bus();
    rag_bus::admin::ensure_topics(&bus).await.context("creating the run's topics")?;

    let workdir = std::env::temp_dir().join(format!("rag-soak-{id}"));
    let followed = workdir.join("followed");
    let mut folder = Folder { dir: followed.join("ghi-chu"), next: 0, present: Default::default(), edits: 0 };
    std::fs::create_dir_all(&folder.dir)?;
    for _ in 0..8 {
        folder.add()?;
    }
    let llm = fake_llm::FakeLlm::start(fake_llm::PIECE_DELAY).await?;
    let (api_port, metrics_port) = (free_port()?, free_port()?);
    let mut env = super::member_env(&prefix, &run_db.url, &followed, 10);
    for (k, v) in [("ANSWER_LLM_BASE_URL", llm.base_url.as_str()), ("ANSWER_LLM_MODEL", "soak-llm"), ("ANSWER_LLM_API_KEY", "soak")] {
        env.insert(k.to_string(), v.to_string());
    }
    // One user asks through every door (22 questions a minute in a short
    // run, 120 in an hour): the limits sit well above the load, as a 429
    // fails the run. Streams: a hung-up one is held to its next keep-alive
    // (15 s), a slow reader's for 8 s.
    env.insert("API_QUESTIONS_PER_MINUTE".into(), format!("{:.0}", plan.questions_per_minute() * 2.0 + 20.0));
    env.insert("API_STREAMS_PER_USER".into(), "32".into());
    let api_addr = format!("127.0.0.1:{api_port}");
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let exe = crate::engine_exe()?;
    let mut server_env = env.clone();
    server_env.insert("API_ADDR".into(), api_addr.clone());
    server_env.insert("METRICS_ADDR".into(), metrics_addr.clone());
    server_env.insert("DATABASE_MAX_CONNECTIONS".into(), "10".into());
    // Its connections told apart from the struck processes' (pg_stat_activity).
    let separator = if run_db.url.contains('?') { '&' } else { '?' };
    server_env.insert("DATABASE_URL".into(), format!("{}{separator}application_name={RUN_ALL_APPLICATION}", run_db.url));
    // `run all` is a fleet of its own, supervised like the struck ones but
    // never struck: its restarts (none, if all is well) are counted apart.
    let run_all = Member { stage: "all", child: None, log: workdir.join("run-all.log") };
    let mut server = Fleet { exe: exe.clone(), env: server_env, members: vec![run_all], stage_restarts: 0 };
    server.start_all()?;
    let members =
        STRUCK.iter().enumerate().map(|(i, stage)| Member { stage, child: None, log: workdir.join(format!("{stage}-{i}.log")) }).collect();
    let mut fleet = Fleet { exe: exe.clone(), env: env.clone(), members, stage_restarts: 0 };
    fleet.start_all()?;
    let http = reqwest::Client::builder().timeout(Duration::from_secs(200)).build()?;
    let base = format!("http://{api_addr}");
    wait_ready(&http, &base, Duration::from_secs(120)).await?;

    // The user, their workspace, its key, the followed folder, and poison
    // on the uploads topic (dead-lettered, and nothing else may be).
    let token = output(&exe, &env, &["token", "--user", "soak", "--ttl", &format!("{}m", args.minutes + 60)]).await?;
    let token = token.as_str().context("rag-engine token printed no token")?.to_string();
    let created = http.post(format!("{base}/v1/workspaces")).bearer_auth(&token).json(&json!({"name": "Soak"})).send().await?;
    let workspace = created.json::<serde_json::Value>().await?["id"].as_str().context("no workspace id")?.to_string();
    let doors = Arc::new(Doors {
        http: http.clone(),
        base: base.clone(),
        token,
        workspace: workspace.clone(),
        key: Mutex::new((String::new(), String::new())),
        started,
        ledger: Mutex::default(),
    });
    anyhow::ensure!(doors.rotate_key().await, "creating the run's API key failed");
    let added =
        output(&exe, &env, &["sources", "add", "--workspace", &workspace, "--folder", &folder.dir.display().to_string(), "--json"]).await?;
    let source: uuid::Uuid = added["id"].as_str().and_then(|i| i.parse().ok()).context("sources add printed no id")?;
    let producer = EventProducer::new(&bus, Codec::embedded()?, "rag-engine/soak")?;
    let poison = super::produce_poison(&bus, &producer, 3).await?;

    let stack = figures::StackPaths {
        local: args.stack_script.parent().and_then(Path::parent).map(|r| r.join(".local")).unwrap_or_else(|| ".local".into()),
    };
    let metrics_url = format!("http://{metrics_addr}/metrics");
    let sampler = figures::Sampler {
        settings: &ts,
        bus: &bus,
        pool: &pool,
        database: &run_db.name,
        run_all_application: RUN_ALL_APPLICATION,
        workspace: &workspace,
        stack: &stack,
        metrics_url: &metrics_url,
        http: &http,
    };
    let processes = |server: &Fleet, fleet: &Fleet| -> Vec<(String, u32)> {
        let pid = server.members.first().and_then(|m| m.child.as_ref()?.id());
        let mut p: Vec<(String, u32)> = pid.map(|pid| ("run-all".to_string(), pid)).into_iter().collect();
        p.extend(fleet.members.iter().filter_map(|m| Some((m.stage.to_string(), m.child.as_ref()?.id()?))));
        p
    };

    eprintln!(
        "[soak] {} min through every door of run all (API {base}); figures every {} s; logs in {}",
        args.minutes,
        plan.sample_every.as_secs(),
        workdir.display()
    );
    let files = more_formats(corpus::files(usize::try_from(plan.length.as_secs() / plan.upload_every.as_secs()).unwrap_or(1000) + 10));
    let hostile = hostile_files();
    let mut tasks = tokio::task::JoinSet::new();
    let mut samples: Vec<Sample> = Vec::new();
    let mut faults: Vec<Fault> = Vec::new();
    let uploaded: Arc<Mutex<std::collections::VecDeque<String>>> = Arc::default();
    // Hostile uploads accepted: (document, file name, the failure code it must end with).
    let hostile_ids: Arc<Mutex<Vec<HostileUpload>>> = Arc::default();
    let (mut n_upload, mut n_question, mut n_chat, mut n_mcp) = (0usize, 0usize, 0usize, 0usize);
    let conversation: Arc<Mutex<Option<String>>> = Arc::default();
    let mut replay: Option<Child> = None;
    let services = ["kafka", "postgres", "s3"];
    let t0 = Instant::now();
    // Whether the next slot of a schedule has come; slots missed while the
    // loop waited (a sample during a restart) are skipped, not fired in a
    // burst, so that the rate stays steady.
    let due = |every: Duration, next: &mut usize| {
        let slot = (t0.elapsed().as_secs_f64() / every.as_secs_f64()) as usize;
        if slot + 1 > *next {
            *next = slot + 1;
            true
        } else {
            false
        }
    };
    let (mut n_sample, mut n_key, mut n_folder, mut n_strike, mut n_restart) = (0usize, 1usize, 1usize, 1usize, 0usize);
    // The doors that ask come at random moments around their means (the
    // seeds fixed: every run asks at the same moments).
    let (mut asking, mut chatting, mut calling) =
        (Arrivals::new(plan.question_every, 1), Arrivals::new(plan.chat_every, 2), Arrivals::new(plan.mcp_every, 3));
    // Uploads too, and with them the deletions that follow them: every 10 s
    // on the clock, they met the strikes (every 30 s) at the same three
    // moments, and the slowest deletions of the third hour all began some
    // 19 s after one.
    let mut uploading = Arrivals::new(plan.upload_every, 4);
    let mut restarting: Option<tokio::task::JoinHandle<anyhow::Result<()>>> = None;
    while t0.elapsed() < plan.length {
        server.supervise()?;
        fleet.supervise()?;
        if due(plan.sample_every, &mut n_sample) {
            let sample = sampler.sample(started.elapsed().as_secs_f64(), &processes(&server, &fleet)).await;
            progress(&sample, &doors, args.minutes);
            samples.push(sample);
        }
        if uploading.due(t0.elapsed().as_secs_f64()) {
            let i = n_upload;
            n_upload += 1;
            let is_hostile = i % plan.hostile_every == plan.hostile_every - 1;
            let (f, failure) = if is_hostile {
                let (f, code) = &hostile[(i / plan.hostile_every) % hostile.len()];
                (f, *code)
            } else {
                (&files[i % files.len()], None)
            };
            let (name, bytes, expect) = (f.name.clone(), f.bytes.clone(), f.expect);
            let (d, uploaded, keep, hostile_ids) = (doors.clone(), uploaded.clone(), plan.live_uploads, hostile_ids.clone());
            // Uploaded documents stay at about `keep`: past it, the oldest
            // is deleted (a steady state, whose memory can be judged). The
            // hostile ones stay, to be checked at the end with their reason.
            tasks.spawn(async move {
                let Some(id) = d.upload(&name, bytes, expect).await else { return };
                if is_hostile {
                    if let Ok(mut h) = hostile_ids.lock() {
                        h.push((id, name, failure));
                    }
                    return;
                }
                let old = uploaded.lock().ok().and_then(|mut u| {
                    u.push_back(id);
                    (u.len() > keep).then(|| u.pop_front()).flatten()
                });
                if let Some(old) = old {
                    d.delete(&old).await;
                }
            });
        }
        if asking.due(t0.elapsed().as_secs_f64()) {
            let i = n_question;
            n_question += 1;
            let (d, last) = (doors.clone(), conversation.clone());
            // Every third question a follow-up (n % 3 == 2); of the others,
            // one in six hangs up and one in six reads slowly.
            let reading = match i % 6 {
                3 => Reading::Disconnects,
                4 => Reading::Slowly,
                _ => Reading::Whole,
            };
            let follow = (i % 3 == 2).then(|| last.lock().ok().and_then(|c| c.clone())).flatten();
            let q = if follow.is_some() { FOLLOW_UPS[i % FOLLOW_UPS.len()] } else { QUESTIONS[i % QUESTIONS.len()] };
            tasks.spawn(async move {
                let asked = d.page_question(q, follow, reading).await;
                if let (Some(c), Ok(mut last)) = (asked, last.lock()) {
                    *last = Some(c);
                }
            });
        }
        if chatting.due(t0.elapsed().as_secs_f64()) {
            n_chat += 1;
            let d = doors.clone();
            let q = QUESTIONS[(n_chat + 1) % QUESTIONS.len()];
            let stream = n_chat % 2 == 0;
            tasks.spawn(async move { d.chat(q, stream).await });
        }
        if calling.due(t0.elapsed().as_secs_f64()) {
            n_mcp += 1;
            let d = doors.clone();
            let ws = workspace.clone();
            let q = QUESTIONS[(n_mcp + 2) % QUESTIONS.len()];
            let ask = n_mcp % 2 == 0;
            tasks.spawn(async move {
                if ask {
                    d.mcp("ask", json!({"workspace": ws, "question": q})).await
                } else {
                    d.mcp("search", json!({"workspace": ws, "query": q})).await
                }
            });
        }
        if due(plan.key_every, &mut n_key) {
            let d = doors.clone();
            tasks.spawn(async move {
                d.rotate_key().await;
            });
        }
        if due(plan.folder_every, &mut n_folder) {
            folder.churn()?;
        }
        if replay.is_none() && t0.elapsed().as_secs_f64() >= plan.length.as_secs_f64() * plan.replay_at {
            eprintln!("[soak] re-chunking the workspace by replay (fine@1)");
            let out = std::fs::File::create(workdir.join("replay.json"))?;
            let err = std::fs::File::create(workdir.join("replay.log"))?;
            replay = Some(
                Command::new(&exe)
                    .args(["replay", "chunking", "--profile", "fine@1", "--workspace", &workspace, "--timeout", "900", "--json"])
                    .envs(&env)
                    .stdin(Stdio::null())
                    .stdout(out)
                    .stderr(err)
                    .kill_on_drop(true)
                    .spawn()?,
            );
            faults.push(Fault { at: started.elapsed().as_secs_f64(), kind: "replay".into(), target: "chunking fine@1".into() });
        }
        if due(plan.strike_every, &mut n_strike) {
            // The same rotation in every stretch of the run (a stage each
            // time, every fourth a SIGTERM), so that the first and the last
            // ten minutes meet the same faults and their latencies compare.
            let victim = (n_strike - 2) % fleet.members.len();
            let kill = (n_strike - 1) % 4 != 0;
            fleet.strike(victim, kill);
            faults.push(Fault {
                at: started.elapsed().as_secs_f64(),
                kind: if kill { "sigkill" } else { "sigterm" }.into(),
                target: fleet.members[victim].stage.to_string(),
            });
        }
        // The services in turn, from half a period in; in the background,
        // so that the load and the samples go on meanwhile.
        if restarting.as_ref().is_none_or(|r| r.is_finished())
            && t0.elapsed() >= plan.restart_every / 2 + plan.restart_every * u32::try_from(n_restart).unwrap_or(u32::MAX)
        {
            if let Some(previous) = restarting.take() {
                previous.await??;
            }
            let service = services[n_restart % services.len()];
            n_restart += 1;
            eprintln!("[soak] restarting {service}");
            faults.push(Fault { at: started.elapsed().as_secs_f64(), kind: "restart".into(), target: service.into() });
            let script = args.stack_script.clone();
            restarting = Some(tokio::spawn(async move {
                let status = Command::new(&script).args(["restart", service]).stdout(Stdio::null()).status().await?;
                anyhow::ensure!(status.success(), "`{} restart {service}` failed", script.display());
                Ok(())
            }));
        }
        while let Some(done) = tasks.try_join_next() {
            if let Err(e) = done {
                tracing::warn!(error = %e, "a soak client task failed");
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let load_secs = started.elapsed().as_secs_f64();
    if let Some(r) = restarting.take() {
        r.await??;
    }

    // Settle: no more load or faults; the clients finish, the pipeline
    // drains, the replay ends.
    eprintln!("[soak] load stopped; waiting for the clients, the pipeline and the replay");
    while let Some(done) = tasks.join_next().await {
        if let Err(e) = done {
            tracing::warn!(error = %e, "a soak client task failed");
        }
    }
    let settle_start = Instant::now();
    let replay_ok = loop {
        server.supervise()?;
        fleet.supervise()?;
        let (docs, msgs) = rag_store::audit::unfinished(&pool).await.unwrap_or((i64::MAX, i64::MAX));
        let lag = figures::lag(&ts, &bus, &pool).await.map(|l| l.values().sum::<i64>()).unwrap_or(i64::MAX);
        let replay_done = match replay.as_mut() {
            Some(r) => r.try_wait()?.map(|s| s.success()),
            None => Some(true),
        };
        let synced = folder_settled(&pool, source, &folder).await;
        if docs == 0 && msgs == 0 && lag == 0 && synced && replay_done.is_some() {
            tokio::time::sleep(Duration::from_secs(3)).await;
            break replay_done.unwrap_or(false);
        }
        if settle_start.elapsed() > Duration::from_secs(600) {
            eprintln!("[soak] not settled after 600 s: {docs} documents and {msgs} answers unfinished, lag {lag}, folder synced {synced}");
            break replay_done.unwrap_or(false);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let settle_secs = settle_start.elapsed().as_secs_f64();
    // A stream whose client hung up is released when the server next
    // writes to it (its keep-alive comes every 15 s): wait that long.
    let released_by = Instant::now() + Duration::from_secs(45);
    let last = loop {
        let last = sampler.sample(started.elapsed().as_secs_f64(), &processes(&server, &fleet)).await;
        if last.open_streams == Some(0.0) || Instant::now() > released_by {
            break last;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let streams_open = last.open_streams;
    samples.push(last);
    let verify_out = Command::new(&exe).args(["verify", "--json"]).envs(&env).stdin(Stdio::null()).output().await?;
    let verify: serde_json::Value = serde_json::from_slice(&verify_out.stdout).unwrap_or(json!({"clean": false}));
    server.stop_all().await;
    fleet.stop_all().await;

    // The invariants.
    let ledger = std::mem::take(&mut *doors.ledger.lock().map_err(|_| anyhow::anyhow!("the ledger's lock is poisoned"))?);
    let mut expected: HashMap<String, Expect> = ledger.accepted.iter().cloned().collect();
    let source_files = rag_store::sources::files(&pool, source).await?;
    for f in &source_files {
        let expect = if f.state == "present" { Expect::Ingested } else { Expect::Deleted };
        expected.insert(f.document_id.to_string(), expect);
    }
    let mut invariants = super::checks::check(&pool, &bus, &expected, &ledger.questions, QuestionsKnown::Some, &poison).await?;
    let hostile_report = hostile_check(&pool, &workspace, &hostile_ids.lock().map(|h| h.clone()).unwrap_or_default()).await?;
    invariants["hostile"] = hostile_report.clone();
    // Requests that failed away from a service restart: none may.
    let failed: Vec<&report::RequestRecord> =
        ledger.records.iter().filter(|r| report::failed(r) && !report::near_restart(r, &faults, report::RESTART_GRACE)).collect();
    invariants["requests_failed_outside_restarts"] = json!({"count": failed.len(), "first": failed.iter().take(10).map(|r| format!("{} at {:.0} s: {}", r.door, r.at, r.status)).collect::<Vec<_>>()});
    invariants["run_all_restarts"] = server.stage_restarts.into();
    invariants["verify_clean"] = (verify["clean"] == true && verify_out.status.success()).into();
    invariants["streams_released"] = json!({"open_at_end": streams_open, "ok": streams_open == Some(0.0)});
    let folder_report = folder_check(&pool, &workspace, &folder).await?;
    invariants["folder"] = folder_report.clone();
    invariants["replay_ok"] = replay_ok.into();
    let invariants_ok = invariants["ok"] == true
        && invariants["questions"]["failed"] == 0
        && invariants["verify_clean"] == true
        && streams_open == Some(0.0)
        && folder_report["ok"] == true
        && hostile_report["ok"] == true
        && failed.is_empty()
        && server.stage_restarts == 0
        && replay_ok;
    invariants["ok"] = invariants_ok.into();

    let windows = Windows::of(load_secs);
    let verdicts = report::judge(&samples, &ledger.records, &faults, windows);
    // Growth and drift are judged on runs long enough to tell them from
    // noise; a short run (the test command's) gates on the invariants.
    let judged = args.minutes >= 30;
    let ok = invariants_ok && (!judged || verdicts.iter().all(|v| v.ok));
    let doors_whole = report::door_windows(&ledger.records, 0.0, f64::MAX);
    let summary = json!({
        "profile": "soak",
        "minutes": args.minutes,
        "ok": ok,
        "invariants": invariants,
        "verdicts": verdicts,
        "verdicts_gate": judged,
        "doors": doors_whole,
        "doors_first_stretch": report::door_windows(&ledger.records, 0.0, windows.stretch),
        "doors_last_stretch": report::door_windows(&ledger.records, load_secs - windows.stretch, f64::MAX),
        "disk_bytes_per_1000_documents": report::disk_per_thousand(&samples),
        // What bounds the disk: topics keep every event (a replay re-reads
        // them); deletions purge a document's rows; superseded revisions
        // no answer cites are dropped.
        "retention": {"topics": "retention.ms=-1, retention.bytes=-1", "deleted_documents": "purged",
            "REVISION_RETENTION": env.get("REVISION_RETENTION").cloned().unwrap_or_else(|| "cited (default)".into())},
        "faults": {
            "sigkill": faults.iter().filter(|f| f.kind == "sigkill").count(),
            "sigterm": faults.iter().filter(|f| f.kind == "sigterm").count(),
            "restarts": faults.iter().filter(|f| f.kind == "restart").map(|f| f.target.clone()).collect::<Vec<_>>(),
            "stage_restarts": fleet.stage_restarts,
            "run_all_restarts": server.stage_restarts,
        },
        "counts": {"uploads_accepted": ledger.accepted.len(), "questions": ledger.questions.len(), "requests": ledger.records.len(),
            "llm_calls": llm.calls(), "folder_files": folder.present.len(), "folder_changes": folder.edits},
        "seconds": {"load": load_secs.round(), "settle": settle_secs.round(), "total": started.elapsed().as_secs_f64().round()},
        "database": run_db.name,
        "logs": workdir.display().to_string(),
    });
    std::fs::create_dir_all(&args.report)?;
    let data = report::RunData { summary: summary.clone(), samples, requests: ledger.records, faults };
    std::fs::write(args.report.join("soak.json"), serde_json::to_vec_pretty(&data)?)?;
    std::fs::write(args.report.join("soak.html"), data.html())?;
    for v in &verdicts {
        eprintln!("[soak] {}: {} (limit {}) {}", v.figure, v.measured, v.limit, if v.ok { "ok" } else { "NOT MET" });
    }
    eprintln!(
        "[soak] {}: lost {}, doubled {}, stuck {}, verify {}, streams open at the end {:?}; report in {}",
        if ok { "clean" } else { "FAILED" },
        invariants["lost"],
        invariants["doubled"],
        invariants["stuck"],
        if invariants["verify_clean"] == true { "clean" } else { "NOT clean" },
        streams_open,
        args.report.join("soak.html").display()
    );
    println!("{}", serde_json::to_string_pretty(&summary)?);
    if ok && !args.keep {
        run_db.drop_database().await;
        let _ = std::fs::remove_dir_all(&workdir);
    } else {
        pool.close().await;
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn progress(s: &Sample, doors: &Doors, minutes: u64) {
    let (requests, refused, failed) = doors
        .ledger
        .lock()
        .map(|l| {
            let r = &l.records;
            (r.len(), r.iter().filter(|x| x.status == 429).count(), r.iter().filter(|x| report::failed(x) && x.status != 429).count())
        })
        .unwrap_or_default();
    eprintln!(
        "[soak] {:.1}/{minutes} min: run all {} MiB, {} fds, {} database connections; lag {}; {} requests ({} refused, {} failed); {} answers; {} documents live",
        s.at / 60.0,
        s.rss_kib.get("run-all").map(|v| v / 1024).unwrap_or(0),
        s.fds.get("run-all").copied().unwrap_or(0),
        s.run_all_connections.unwrap_or(-1),
        s.lag.values().sum::<i64>(),
        requests,
        refused,
        failed,
        s.answers.unwrap_or(-1),
        s.documents_live.unwrap_or(-1)
    );
}
