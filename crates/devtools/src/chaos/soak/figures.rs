//! The figures a soak samples every interval: memory and descriptors of
//! each process (from /proc), the run's database connections and size,
//! the broker's and the object store's bytes on disk, each stage's lag (the
//! log ends against the groups' positions, wherever a stage keeps them),
//! the API's open streams (its own exporter), documents and answers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rag_app::config::Settings;
use rag_bus::BusConfig;

use super::report::Sample;

/// Resident memory (KiB) of a process, from /proc/PID/status.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()).and_then(|v| v.parse().ok())
}

/// Open file descriptors of a process.
pub fn fds(pid: u32) -> Option<u64> {
    std::fs::read_dir(format!("/proc/{pid}/fd")).ok().map(|d| d.count() as u64)
}

/// The parent of a process, from /proc/PID/stat (its fourth field, after
/// the command name in parentheses, which may hold spaces).
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// A process and every process it started (Postgres: the postmaster and
/// its backends).
pub fn with_children(root: u32) -> Vec<u32> {
    let mut all = vec![root];
    let Ok(entries) = std::fs::read_dir("/proc") else { return all };
    let pids: Vec<u32> = entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect();
    let mut grew = true;
    while grew {
        grew = false;
        for &p in &pids {
            if !all.contains(&p) && parent(p).is_some_and(|pp| all.contains(&pp)) {
                all.push(p);
                grew = true;
            }
        }
    }
    all
}

/// The pid a file names on its first line (`.local/run/*.pid`, Postgres's
/// `postmaster.pid`), when that process is alive.
pub fn pid_in(file: &Path) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(file).ok()?.lines().next()?.trim().parse().ok()?;
    Path::new(&format!("/proc/{pid}")).exists().then_some(pid)
}

/// Bytes of the files under `dir`, recursively.
pub fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => bytes_under(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

/// Where the local stack keeps its processes' pid files and data.
pub struct StackPaths {
    pub local: PathBuf,
}

impl StackPaths {
    fn broker_pid(&self) -> Option<u32> {
        pid_in(&self.local.join("run/tansu.pid"))
    }
    fn objectstore_pid(&self) -> Option<u32> {
        pid_in(&self.local.join("run/s3s-fs.pid"))
    }
    fn postgres_pid(&self) -> Option<u32> {
        pid_in(&self.local.join("pg/postmaster.pid"))
    }
}

/// Records not yet processed per stage: for each topic a stage consumes,
/// the partitions' log ends minus the group's next offsets (in Kafka or in
/// Postgres, as the stage keeps them).
pub async fn lag(s: &Settings, bus: &BusConfig, pool: &rag_store::sqlx::PgPool) -> anyhow::Result<BTreeMap<String, i64>> {
    let mut out = BTreeMap::new();
    for stage in rag_stages::pipeline(&s.parsing.chunking_profile()?) {
        let group = bus.group_of(&stage.group);
        let pg: Vec<(String, i32, i64)> = match stage.positions {
            rag_bus::Positions::Postgres => rag_store::offsets::list(pool, &group).await?,
            rag_bus::Positions::Kafka => Vec::new(),
        };
        let mut behind = 0i64;
        for event in &stage.consumes {
            let topic = bus.topics.of(*event);
            let next: BTreeMap<i32, i64> = match stage.positions {
                rag_bus::Positions::Kafka => rag_bus::admin::committed_offsets(bus, &group, &topic)
                    .await?
                    .into_iter()
                    .filter_map(|(p, c)| c.map(|c| (p, c)))
                    .collect(),
                rag_bus::Positions::Postgres => pg.iter().filter(|(t, _, _)| *t == topic).map(|(_, p, n)| (*p, *n)).collect(),
            };
            for (p, low, high) in rag_bus::admin::watermarks(bus, &topic).await? {
                behind += (high - next.get(&p).copied().unwrap_or(low).max(low)).max(0);
            }
        }
        out.insert(stage.name.to_string(), behind);
    }
    Ok(out)
}

/// The value of an unlabelled-or-matching series in Prometheus text.
pub fn metric_value(text: &str, name: &str, label: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']) && l.contains(label))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// What the sampler reads from: the processes of the run and the stack.
pub struct Sampler<'a> {
    pub settings: &'a Settings,
    pub bus: &'a BusConfig,
    pub pool: &'a rag_store::sqlx::PgPool,
    pub database: &'a str,
    /// `run all`'s application name in pg_stat_activity.
    pub run_all_application: &'a str,
    pub workspace: &'a str,
    pub stack: &'a StackPaths,
    /// `run all`'s exporter (`http://127.0.0.1:PORT/metrics`).
    pub metrics_url: &'a str,
    pub http: &'a reqwest::Client,
}

impl Sampler<'_> {
    /// One sample; a figure that cannot be read now (a service restarting)
    /// is left out of this sample rather than failing the run.
    pub async fn sample(&self, at: f64, processes: &[(String, u32)]) -> Sample {
        let mut s = Sample { at, ..Sample::default() };
        for (name, pid) in processes {
            if let (Some(rss), Some(n)) = (rss_kib(*pid), fds(*pid)) {
                s.rss_kib.insert(name.clone(), rss);
                s.fds.insert(name.clone(), n);
            }
        }
        for (name, pid) in [("broker", self.stack.broker_pid()), ("objectstore", self.stack.objectstore_pid())] {
            if let Some(pid) = pid {
                s.rss_kib.extend(rss_kib(pid).map(|v| (name.to_string(), v)));
                s.fds.extend(fds(pid).map(|v| (name.to_string(), v)));
            }
        }
        if let Some(pid) = self.stack.postgres_pid() {
            let total: u64 = with_children(pid).into_iter().filter_map(rss_kib).sum();
            s.rss_kib.insert("postgres".into(), total);
            s.fds.extend(fds(pid).map(|v| ("postgres".to_string(), v)));
        }
        s.disk_bytes.insert("broker".into(), bytes_under(&self.stack.local.join("kafka")));
        s.disk_bytes.insert("objectstore".into(), bytes_under(&self.stack.local.join("s3")));
        let db: Result<(i64, i64, i64), _> = rag_store::sqlx::query_as(
            "SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = $1),
                    (SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2),
                    pg_database_size($1)",
        )
        .bind(self.database)
        .bind(self.run_all_application)
        .fetch_one(self.pool)
        .await;
        if let Ok((connections, run_all, size)) = db {
            s.pg_connections = Some(connections);
            s.run_all_connections = Some(run_all);
            s.disk_bytes.insert("postgres".into(), u64::try_from(size).unwrap_or(0));
        }
        let counts: Result<(i64, i64, i64), _> = rag_store::sqlx::query_as(
            "SELECT (SELECT count(*) FROM documents WHERE workspace_id = $1),
                    (SELECT count(*) FROM documents WHERE workspace_id = $1 AND status <> 'deleted'),
                    (SELECT count(*) FROM messages WHERE workspace_id = $1 AND role = 'assistant' AND status <> 'pending')",
        )
        .bind(self.workspace)
        .fetch_one(self.pool)
        .await;
        if let Ok((documents, live, answers)) = counts {
            (s.documents, s.documents_live, s.answers) = (Some(documents), Some(live), Some(answers));
        }
        match lag(self.settings, self.bus, self.pool).await {
            Ok(lag) => s.lag = lag,
            Err(e) => tracing::debug!(error = %e, "lag not read in this sample"),
        }
        if let Ok(resp) = self.http.get(self.metrics_url).send().await {
            if let Ok(text) = resp.text().await {
                // Absent until the first stream opened: then none is open.
                let any = text.contains(rag_telemetry::names::HTTP_IN_FLIGHT);
                s.open_streams = metric_value(&text, rag_telemetry::names::HTTP_IN_FLIGHT, "kind=\"stream\"").or((!any).then_some(0.0));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_measured() {
        let me = std::process::id();
        assert!(rss_kib(me).unwrap() > 0);
        assert!(fds(me).unwrap() >= 3);
        assert!(with_children(me).contains(&me));
        assert_eq!(parent(me), Some(std::os::unix::process::parent_id()));
    }

    #[test]
    fn a_metric_is_read_by_name_and_label() {
        let text = "# HELP rag_http_in_flight x\nrag_http_in_flight_other 5\nrag_http_in_flight{kind=\"upload\"} 1\nrag_http_in_flight{kind=\"stream\"} 3\n";
        assert_eq!(metric_value(text, "rag_http_in_flight", "kind=\"stream\""), Some(3.0));
        assert_eq!(metric_value(text, "rag_http_in_flight", "kind=\"nothing\""), None);
    }

    #[test]
    fn bytes_are_summed_through_folders() {
        let dir = std::env::temp_dir().join(format!("soak-bytes-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        std::fs::write(dir.join("x"), [0u8; 10]).unwrap();
        std::fs::write(dir.join("a/b/y"), [0u8; 5]).unwrap();
        assert_eq!(bytes_under(&dir), 15);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
