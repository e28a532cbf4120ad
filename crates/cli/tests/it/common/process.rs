//! A subprocess of the binary: where a process must die (SIGKILL at a
//! failpoint, SIGTERM), or its output is what is tested.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::process::Child;

use super::{metrics_of, sum_metric, wait_until};

pub struct Process {
    pub child: Child,
    pub lines: Arc<Mutex<Vec<String>>>,
    pub metrics_port: u16,
    /// Where `run all` / `run api` serve the HTTP API.
    pub api_port: u16,
}

impl Process {
    /// Waits until the process stops at its failpoint: it prints the
    /// documented `FAILPOINT <name> reached` line on stderr and hangs
    /// (`rag_stages::failpoint`), so the test can SIGKILL it right there.
    pub async fn wait_for_failpoint(&self, timeout: Duration) {
        wait_until(
            "the process to reach its failpoint (a build without `--features rag-engine/failpoints` never does; scripts/test turns it on)",
            timeout,
            || async { self.lines.lock().unwrap().iter().any(|l| l.starts_with("FAILPOINT ") && l.ends_with(" reached")) },
        )
        .await;
    }

    pub async fn metrics(&self) -> String {
        metrics_of(self.metrics_port).await
    }

    /// Value of a counter/gauge summed over the series whose labels contain
    /// every given `label="value"` fragment.
    pub async fn metric_sum(&self, name: &str, labels: &[&str]) -> f64 {
        sum_metric(&self.metrics().await, name, labels)
    }

    pub async fn sigkill(&mut self) {
        self.child.kill().await.unwrap();
    }

    /// SIGTERM, then wait for the exit status.
    pub async fn terminate(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let pid = self.child.id().expect("process still running");
        let status = std::process::Command::new("kill").arg("-TERM").arg(pid.to_string()).status().unwrap();
        assert!(status.success());
        tokio::time::timeout(timeout, self.child.wait()).await.expect("process did not stop after SIGTERM").unwrap()
    }
}
