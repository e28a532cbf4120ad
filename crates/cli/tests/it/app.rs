//! [`TestApp`]: the real stages and the HTTP API of `rag-engine run all`,
//! started in-process as tokio tasks on the real local stack, configured
//! from the test's own variables (its database, topic prefix, secret).
//! Metrics are read from the process's recorder (nextest runs each test in
//! a process of its own, so they are the test's own).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rag_app::config::Settings;
use rag_app::run::{start_api, start_stages, StageName, StageTasks};
use rag_telemetry::PrometheusHandle;
use tokio_util::sync::CancellationToken;

use crate::common::{sum_metric, wait_until, TestEnv};

pub struct TestApp {
    /// Where the API and the web page are served.
    pub api_port: u16,
    metrics: PrometheusHandle,
    /// The metrics as they were when this app started (an earlier app of
    /// the same test shares the recorder).
    at_spawn: String,
    shutdown: CancellationToken,
    /// Shared with the test's [`TestEnv`], whose cleanup joins them.
    tasks: Arc<tokio::sync::Mutex<StageTasks>>,
}

impl TestApp {
    /// Every stage and the API, with `extra` variables over the test's.
    pub async fn spawn(t: &TestEnv, extra: &[(&str, &str)]) -> TestApp {
        Self::spawn_stages(t, StageName::All, extra).await
    }

    /// Only `which` (and the API when it is `All` or `Api`).
    pub async fn spawn_stages(t: &TestEnv, which: StageName, extra: &[(&str, &str)]) -> TestApp {
        let _ = rag_telemetry::init_logs(false);
        let metrics = rag_telemetry::install_metrics_recorder().expect("metrics recorder");
        let mut vars: HashMap<String, String> = t.env.clone();
        for (k, v) in extra {
            vars.insert(k.to_string(), v.to_string());
        }
        let settings = Settings::from_vars(&vars).expect("the test's settings");
        let pool = rag_store::connect(&settings.store()).await.expect("connecting to the test's database");
        let shutdown = CancellationToken::new();
        let mut tasks = start_stages(&settings, which, &pool, &shutdown).await.expect("starting the stages");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let api_port = listener.local_addr().unwrap().port();
        if matches!(which, StageName::All | StageName::Api) {
            let jwt = settings.jwt().expect("JWT_SECRET");
            start_api(&settings, jwt, listener, &pool, &shutdown, &mut tasks).expect("starting the API");
        }
        let at_spawn = metrics.render();
        let tasks = Arc::new(tokio::sync::Mutex::new(tasks));
        t.live_apps.lock().unwrap().push((shutdown.clone(), tasks.clone()));
        TestApp { api_port, metrics, at_spawn, shutdown, tasks }
    }

    /// The Prometheus exposition of this process's metrics.
    pub fn metrics(&self) -> String {
        self.metrics.render()
    }

    /// A counter or gauge summed over the series whose labels contain every
    /// `label="value"` fragment.
    pub fn metric_sum(&self, name: &str, labels: &[&str]) -> f64 {
        sum_metric(&self.metrics(), name, labels)
    }

    /// Waits until the metric's sum reaches `at_least`.
    pub async fn wait_for_metric(&self, name: &str, labels: &[&str], at_least: f64, timeout: Duration) {
        wait_until(&format!("{name}{labels:?} >= {at_least}"), timeout, || async { self.metric_sum(name, labels) >= at_least }).await;
    }

    /// Waits until this app's instance of `stage` has been given partitions.
    pub async fn wait_for_assignment(&self, stage: &str, timeout: Duration) {
        let labels = [format!("stage=\"{stage}\""), "kind=\"assign\"".to_string()];
        let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
        let before = sum_metric(&self.at_spawn, "rag_consumer_rebalances_total", &labels);
        self.wait_for_metric("rag_consumer_rebalances_total", &labels, before + 1.0, timeout).await;
    }

    /// Waits until a task ends on its own (a stage that gave up): its name
    /// and result. `run` stops the process when this happens.
    pub async fn wait_for_a_task_to_end(&mut self, timeout: Duration) -> (String, Result<(), rag_bus::BusError>) {
        let mut tasks = self.tasks.lock().await;
        let joined = tokio::time::timeout(timeout, tasks.join_next()).await.expect("a task ends within the timeout");
        joined.expect("tasks were running").expect("the task did not panic")
    }

    /// Stops every task as SIGTERM would; panics if one failed or did not stop.
    pub async fn stop(self) {
        self.shutdown.cancel();
        let joined = tokio::time::timeout(Duration::from_secs(60), async {
            let mut failures = Vec::new();
            let mut tasks = self.tasks.lock().await;
            while let Some(j) = tasks.join_next().await {
                match j {
                    Ok((_, Ok(()))) => {}
                    Ok((name, Err(e))) => failures.push(format!("{name}: {e}")),
                    Err(e) => failures.push(format!("a task panicked: {e}")),
                }
            }
            failures
        })
        .await
        .expect("every task stops within 60 s of shutdown");
        assert!(joined.is_empty(), "tasks failed: {joined:?}");
    }
}

impl Drop for TestApp {
    /// A test that panics still stops its stages (they hold the group).
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}
