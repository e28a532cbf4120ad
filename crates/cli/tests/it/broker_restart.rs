//! The broker restarted mid-stream loses nothing, and a broker that hangs
//! does not keep a stage from stopping. These tests run their own tansu
//! broker (the binary `scripts/stack up` installed) so restarting or
//! stopping it does not disturb the other tests.

use std::process::Stdio;
use std::time::Duration;

use crate::common::*;

fn start_broker(bin: &str, dir: &std::path::Path, port: u16) -> std::process::Child {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(dir.join("tansu.log")).unwrap();
    std::process::Command::new(bin)
        .current_dir(dir)
        .args([
            "broker",
            "--listener-url",
            &format!("tcp://127.0.0.1:{port}"),
            "--advertised-listener-url",
            &format!("tcp://127.0.0.1:{port}"),
            "--storage-engine",
            "sqlite://tansu.db",
        ])
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap()
}

async fn wait_port(port: u16) {
    wait_until(&format!("port {port}"), Duration::from_secs(30), || async move {
        tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok()
    })
    .await;
}

/// A tansu broker of the test's own, on a free port, its storage in a
/// scratch directory (kept across a restart).
struct PrivateBroker {
    bin: String,
    dir: tempfile::TempDir,
    port: u16,
    child: std::process::Child,
}

impl PrivateBroker {
    async fn start(name: &str) -> PrivateBroker {
        let env = stack_env();
        let bin = env.get("RAG_ENGINE_TANSU_BIN").cloned().expect("RAG_ENGINE_TANSU_BIN (written by scripts/stack up)");
        let dir = crate::common::scratch_dir(name);
        let port = free_port();
        let child = start_broker(&bin, dir.path(), port);
        wait_port(port).await;
        PrivateBroker { bin, dir, port, child }
    }

    fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    async fn restart(&mut self) {
        self.child = start_broker(&self.bin, self.dir.path(), self.port);
        wait_port(self.port).await;
    }

    /// Sends the broker `sig` (`-STOP`, `-CONT`).
    fn signal(&self, sig: &str) {
        let sent = std::process::Command::new("kill").arg(sig).arg(self.child.id().to_string()).status().unwrap();
        assert!(sent.success(), "kill {sig} the broker");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn broker_restarted_mid_stream_loses_nothing() {
    let mut broker = PrivateBroker::start("rag-engine-broker").await;
    let t = TestEnv::with_brokers(Some(broker.address())).await;
    let _projector = t.spawn(&["run", "projector"], &[]);
    let producer = t.producer();

    let mut expected = Vec::new();
    let mut pending: Vec<tokio::task::JoinHandle<Result<rag_bus::producer::Delivered, rag_bus::BusError>>> = Vec::new();
    for i in 0..60 {
        if i == 20 {
            // Mid-stream: wait for what was sent so far, then kill the broker.
            for h in pending.drain(..) {
                tokio::time::timeout(Duration::from_secs(60), h).await.expect("delivery").unwrap().unwrap();
            }
            wait_until("the first 20 rows", Duration::from_secs(60), || async { t.document_count().await >= 20 }).await;
            broker.kill();
        }
        if i == 30 {
            // Records 20..30 were handed to the producer while the broker was
            // down; the idempotent producer delivers them after the restart.
            tokio::time::sleep(Duration::from_secs(2)).await;
            broker.restart().await;
        }
        let e = t.uploaded_event(&format!("doc-{i}.txt"));
        expected.push(e.document_id.clone());
        let p = producer.clone();
        pending.push(tokio::spawn(async move { p.send(&e).await }));
    }
    for h in pending {
        tokio::time::timeout(Duration::from_secs(120), h).await.expect("delivery after restart").unwrap().unwrap();
    }
    expected.sort();
    wait_until("all 60 rows", Duration::from_secs(120), || async { t.document_count().await >= 60 }).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(t.document_ids().await, expected, "every event projected exactly once");
    t.cleanup().await;
    broker.kill();
}

/// A broker that stops answering (SIGSTOP: it keeps its connections and
/// never replies) while the stage's lag reporter is asking it about every
/// partition. The projector reads every topic (14 partitions here) and the
/// report asks a few questions per partition, each with a 5 s timeout; the
/// stage used to wait for the whole report before it stopped: `run
/// projector` was still running 120 s after SIGTERM, and a slow broker
/// under a busy CI run kept `run all` from stopping within 10 s.
#[tokio::test(flavor = "multi_thread")]
async fn a_stage_stops_within_ten_seconds_while_the_broker_hangs() {
    let mut broker = PrivateBroker::start("rag-engine-broker-hangs").await;
    let t = TestEnv::with_brokers(Some(broker.address())).await;
    // A lag report every second, so that one is under way when the broker hangs.
    let mut projector = t.spawn(&["run", "projector"], &[("LAG_INTERVAL_SECS", "1")]);
    // A projected row: the projector holds its partitions and reports their lag.
    t.producer().send(&t.uploaded_event("doc.txt")).await.unwrap();
    wait_until("the row projected", Duration::from_secs(60), || async { t.document_count().await >= 1 }).await;
    broker.signal("-STOP");
    // Long enough for a report to begin and meet the silent broker.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let stopping = std::time::Instant::now();
    let stopped = tokio::time::timeout(Duration::from_secs(10), projector.terminate(Duration::from_secs(3600))).await;
    let elapsed = stopping.elapsed().as_secs_f64();
    broker.signal("-CONT");
    let status = stopped.unwrap_or_else(|_| panic!("run projector still running 10 s after SIGTERM, the broker hanging"));
    eprintln!("run projector stopped {elapsed:.2} s after SIGTERM, the broker hanging ({status})");
    assert!(status.success(), "{status}");
    t.cleanup().await;
    broker.kill();
}
