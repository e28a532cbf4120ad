//! The broker restarted mid-stream loses nothing. This test runs its own
//! tansu broker (the binary `scripts/stack up` installed) so restarting it
//! does not disturb the other tests.

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

#[tokio::test(flavor = "multi_thread")]
async fn broker_restarted_mid_stream_loses_nothing() {
    let env = stack_env();
    let bin = env.get("RAG_ENGINE_TANSU_BIN").cloned().expect("RAG_ENGINE_TANSU_BIN (written by scripts/stack up)");
    let dir_scratch = crate::common::scratch_dir("rag-engine-broker");
    let dir = dir_scratch.path().to_path_buf();
    let port = free_port();
    let mut broker = start_broker(&bin, &dir, port);
    wait_port(port).await;

    let t = TestEnv::with_brokers(Some(format!("127.0.0.1:{port}"))).await;
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
            broker.kill().unwrap();
            broker.wait().unwrap();
        }
        if i == 30 {
            // Records 20..30 were handed to the producer while the broker was
            // down; the idempotent producer delivers them after the restart.
            tokio::time::sleep(Duration::from_secs(2)).await;
            broker = start_broker(&bin, &dir, port);
            wait_port(port).await;
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
    let _ = broker.kill();
    let _ = broker.wait();
}
