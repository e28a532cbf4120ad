//! `rag-dev bench idle`: the CPU `run all` uses when there is nothing to
//! do (polling consumers, lag sampling, the stuck watch). It runs as a
//! child process on throw-away topics, so it joins no real consumer group,
//! and its CPU time is read from /proc before and after a quiet window.

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use serde::Serialize;

use rag_app::config::Settings;

#[derive(Args, Debug, Clone)]
pub struct IdleArgs {
    /// Seconds after start-up before measuring (consumers join their groups).
    #[arg(long, default_value_t = 15)]
    pub settle_seconds: u64,
    /// Seconds measured.
    #[arg(long, default_value_t = 30)]
    pub seconds: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct IdleReport {
    pub seconds: u64,
    /// CPU time of the process over wall time, in % of one core.
    pub cpu_percent_of_one_core: f64,
    pub threads: usize,
}

/// (utime + stime) in clock ticks and the thread count of a process.
fn cpu_ticks(pid: u32) -> anyhow::Result<(u64, usize)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).context("reading /proc (Linux only)")?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).context("unexpected /proc/<pid>/stat");
    // utime, stime and num_threads are fields 14, 15 and 20 of the line; 12, 13 and 18 after the name.
    Ok((field(11)? + field(12)?, field(17)? as usize))
}

fn clock_ticks_per_second() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

pub async fn run(s: &Settings, args: &IdleArgs) -> anyhow::Result<IdleReport> {
    let mut s = s.clone();
    s.kafka.topic_prefix = format!("bench-idle-{}.", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let bus = s.bus();
    rag_bus::admin::ensure_topics(&bus).await.context("creating the run's topics (KAFKA_BROKERS)")?;
    eprintln!(
        "bench idle: `run all` on topics {}*, {} s to settle, {} s measured",
        s.kafka.topic_prefix, args.settle_seconds, args.seconds
    );
    let exe = crate::engine_exe()?;
    let mut child = tokio::process::Command::new(exe)
        .args(["run", "all"])
        .env("TOPIC_PREFIX", &s.kafka.topic_prefix)
        .env("API_ADDR", format!("127.0.0.1:{}", free_port()?))
        .env("METRICS_ADDR", format!("127.0.0.1:{}", free_port()?))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("starting `rag-engine run all`")?;
    let pid = child.id().context("the child exited at once")?;
    let measured = async {
        tokio::time::sleep(Duration::from_secs(args.settle_seconds)).await;
        anyhow::ensure!(child.try_wait()?.is_none(), "`run all` exited during start-up (run it by hand to see why)");
        let (before, _) = cpu_ticks(pid)?;
        let started = std::time::Instant::now();
        tokio::time::sleep(Duration::from_secs(args.seconds.max(1))).await;
        let (after, threads) = cpu_ticks(pid)?;
        let wall = started.elapsed().as_secs_f64();
        let cpu = (after - before) as f64 / clock_ticks_per_second() as f64;
        Ok(IdleReport { seconds: args.seconds, cpu_percent_of_one_core: 100.0 * cpu / wall, threads })
    }
    .await;
    // SIGTERM: a graceful stop (commits, leaves its groups).
    let _ = std::process::Command::new("kill").arg("-TERM").arg(pid.to_string()).status();
    if tokio::time::timeout(Duration::from_secs(30), child.wait()).await.is_err() {
        child.kill().await?;
    }
    let groups = s.pipeline_groups()?;
    if let Err(e) = rag_bus::admin::delete_deployment(&bus, &groups).await {
        eprintln!("deleting the run's topics ({}*): {e}", s.kafka.topic_prefix);
    }
    measured
}

pub fn print(r: &IdleReport) {
    println!("idle `run all` ({} s, {} threads)", r.seconds, r.threads);
    println!("  cpu           {:.2} % of one core", r.cpu_percent_of_one_core);
}
