//! Test harness: real broker, real Postgres, real S3 from `scripts/stack up`.
//! Each test gets a fresh database and its own topic prefix (hence its own
//! topics and consumer groups), so tests run in parallel without seeing each
//! other, as in zero-to-production's `tests/api/helpers.rs`.
//!
//! - this module: [`TestEnv`], the test's environment, and running CLI commands;
//! - [`reads`]: what the tests read from the store, through its functions;
//! - [`process`]: a subprocess of the binary, where a process must die;
//! - [`readers`]: the metrics a process serves and a topic's records.

mod process;
mod readers;
mod reads;

pub use process::Process;
pub use readers::{metrics_of, read_all, sum_metric};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rag_bus::{BusConfig, EventProducer};
use rag_events::{Codec, DocumentUploaded, Envelope, Topics};
use rag_store::sqlx::PgPool;
use rag_store::testing::TestDatabase;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The stack's environment: the process environment, else `.local/env`.
pub fn stack_env() -> HashMap<String, String> {
    let mut env = HashMap::new();
    let file = repo_root().join(".local/env");
    if let Ok(text) = std::fs::read_to_string(&file) {
        for line in text.lines() {
            if let Some((k, v)) = line.trim().trim_start_matches("export ").split_once('=') {
                env.insert(k.to_string(), v.to_string());
            }
        }
    }
    for k in
        ["KAFKA_BROKERS", "DATABASE_URL", "S3_ENDPOINT", "S3_REGION", "S3_BUCKET", "S3_ACCESS_KEY", "S3_SECRET_KEY", "RAG_ENGINE_TANSU_BIN"]
    {
        if let Ok(v) = std::env::var(k) {
            env.insert(k.to_string(), v);
        }
    }
    assert!(
        env.contains_key("KAFKA_BROKERS") && env.contains_key("DATABASE_URL"),
        "the local stack is not configured: run `scripts/stack up` first (it writes .local/env)"
    );
    env
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub async fn wait_until<F, Fut>(what: &str, timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        if check().await {
            return;
        }
        assert!(start.elapsed() < timeout, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The stages of a test's apps, so cleanup stops them before deleting
/// their topics (deleting topics under running consumers broke the local
/// broker's connections and crashed the test process).
pub type LiveApps = Arc<Mutex<Vec<(tokio_util::sync::CancellationToken, Arc<tokio::sync::Mutex<rag_app::run::StageTasks>>)>>>;

pub struct TestEnv {
    pub env: HashMap<String, String>,
    pub prefix: String,
    pub live_apps: LiveApps,
    db: TestDatabase,
    pub pool: PgPool,
    pub workspace: String,
    pub codec: Codec,
}

pub const PARTITIONS: i32 = 4;

impl TestEnv {
    pub async fn new() -> TestEnv {
        Self::with_brokers(None).await
    }

    /// A test environment; `brokers` overrides the stack's broker (tests
    /// that restart their own broker).
    pub async fn with_brokers(brokers: Option<String>) -> TestEnv {
        let mut env = stack_env();
        if let Some(b) = brokers {
            env.insert("KAFKA_BROKERS".into(), b);
        }
        let id = uuid::Uuid::new_v4().simple().to_string();
        let prefix = format!("t{}.", &id[..12]);
        let db = TestDatabase::create(&env["DATABASE_URL"]).await.expect("a fresh database on the stack's Postgres");
        env.insert("DATABASE_URL".into(), db.url.clone());
        env.insert("TOPIC_PREFIX".into(), prefix.clone());
        env.insert("TOPIC_PARTITIONS".into(), PARTITIONS.to_string());
        // Lexical only unless a test asks for an embedder (the product's
        // default embeds with multilingual-e5 wherever .local/env points
        // EMBEDDING_MODEL_DIR at it), and chunk budgets in all-MiniLM-L6-v2's
        // word pieces, which the tests' chunk expectations were written in.
        env.insert("EMBEDDER".into(), "none".into());
        let minilm = env.get("MINILM_MODEL_DIR").cloned().expect("MINILM_MODEL_DIR (scripts/stack up writes it to .local/env)");
        env.insert("EMBEDDING_MODEL_DIR".into(), minilm);
        env.insert("DATABASE_MAX_CONNECTIONS".into(), "4".into());
        env.insert("LAG_INTERVAL_SECS".into(), "1".into());
        // The integration tests run the stages with several records in flight.
        env.insert("STAGE_MAX_IN_FLIGHT".into(), "4".into());
        env.insert("KAFKA_SESSION_TIMEOUT_MS".into(), "6000".into());
        // Fast hops (tests are never idle); the local profile's 500 ms would
        // only make them wait.
        env.insert("KAFKA_FETCH_WAIT_MAX_MS".into(), "20".into());
        // Parse workers are this crate's binary (the test binary is not one).
        env.insert("PARSER_WORKER_EXE".into(), env!("CARGO_BIN_EXE_rag-engine").into());
        // The API's token secret, this test's own.
        env.insert("JWT_SECRET".into(), format!("test-secret-{id}"));
        let pool = db.pool.clone();
        let te = TestEnv {
            env,
            prefix,
            live_apps: LiveApps::default(),
            db,
            pool,
            workspace: format!("ws-{}", &id[16..28]),
            codec: Codec::embedded().unwrap(),
        };
        te.ensure_topics().await;
        te
    }

    /// Writes files to a temporary directory (removed when done) and uploads them into
    /// `workspace` with the CLI.
    pub async fn upload_files<T: AsRef<[u8]>>(&self, workspace: &str, files: &[(&str, T)]) {
        let dir_scratch = crate::common::scratch_dir("rag-engine-files");
        let dir = dir_scratch.path().to_path_buf();
        for (name, text) in files {
            std::fs::write(dir.join(name), text.as_ref()).unwrap();
        }
        let (ok, _, err) = self.run(&["upload", dir.to_str().unwrap(), "--workspace", workspace]).await;
        assert!(ok, "{err}");
    }

    /// Extra environment for every command and process of this test.
    pub fn with_env(mut self, extra: &[(&str, &str)]) -> TestEnv {
        for (k, v) in extra {
            self.env.insert(k.to_string(), v.to_string());
        }
        self
    }

    pub async fn ensure_topics(&self) {
        let bus = self.bus();
        let mut last = None;
        for _ in 0..50 {
            match rag_bus::admin::ensure_topics(&bus).await {
                Ok(_) => return,
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!("creating topics: {last:?}");
    }

    pub fn topics(&self) -> Topics {
        Topics::new(self.prefix.clone())
    }

    pub fn bus(&self) -> BusConfig {
        BusConfig {
            brokers: self.env["KAFKA_BROKERS"].clone(),
            topics: self.topics(),
            partitions: PARTITIONS,
            fetch_wait_max_ms: 20,
            max_retries: 3,
            retry_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            lag_interval: Duration::from_secs(1),
            session_timeout_ms: 6000,
            max_poll_interval_ms: 300_000,
            idempotence: std::env::var("KAFKA_IDEMPOTENCE").map_or(true, |v| v != "false"),
            debug: std::env::var("KAFKA_DEBUG").ok(),
            dead_letter_limit: rag_bus::DeadLetterLimit::default(),
            max_in_flight: 4,
        }
    }

    pub fn producer(&self) -> EventProducer {
        EventProducer::new(&self.bus(), self.codec.clone(), "test").unwrap()
    }

    pub fn command(&self, args: &[&str]) -> Command {
        self.command_of(Path::new(env!("CARGO_BIN_EXE_rag-engine")), args)
    }

    /// `rag-dev` (benchmarks, chaos, evaluations): another package's
    /// binary, so cargo gives no `CARGO_BIN_EXE_` for it; it is built next to
    /// `rag-engine` by any workspace build (the test command's included).
    pub fn dev_command(&self, args: &[&str]) -> Command {
        let exe = Path::new(env!("CARGO_BIN_EXE_rag-engine")).with_file_name("rag-dev");
        assert!(
            exe.exists(),
            "{} is not built: build the workspace (`cargo build --workspace --bins`) or run the test command",
            exe.display()
        );
        self.command_of(&exe, args)
    }

    fn command_of(&self, exe: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(exe);
        // Only the test's settings: a setting of the shell the tests run in
        // (the models profile's EMBEDDING_INPUT_CONVENTION, ANSWER_LLM_*)
        // is not inherited, as `Settings::from_vars` does in process.
        for name in rag_app::config::Settings::variables() {
            if !self.env.contains_key(&name) {
                cmd.env_remove(name);
            }
        }
        cmd.args(args).envs(&self.env).env("RUST_LOG", "info,rdkafka=warn,sqlx=warn").kill_on_drop(true);
        cmd
    }

    /// Runs a command to completion; returns (status ok, stdout, stderr).
    pub async fn run(&self, args: &[&str]) -> (bool, String, String) {
        output_of(self.command(args)).await
    }

    /// Runs a `rag-dev` command to completion, like [`TestEnv::run`].
    pub async fn run_dev(&self, args: &[&str]) -> (bool, String, String) {
        output_of(self.dev_command(args)).await
    }

    /// Starts a long-running process (a stage) with its stderr captured.
    pub fn spawn(&self, args: &[&str], extra_env: &[(&str, &str)]) -> Process {
        let (metrics_port, api_port) = (free_port(), free_port());
        let mut cmd = self.command(args);
        cmd.env("METRICS_ADDR", format!("127.0.0.1:{metrics_port}"));
        cmd.env("API_ADDR", format!("127.0.0.1:{api_port}"));
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = lines.clone();
        let tag = args.join(" ");
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                eprintln!("[{tag}] {line}");
                sink.lock().unwrap().push(line);
            }
        });
        Process { child, lines, metrics_port, api_port }
    }

    pub fn uploaded_event(&self, filename: &str) -> DocumentUploaded {
        DocumentUploaded {
            envelope: Envelope::originating(&self.workspace, "test@0"),
            document_id: uuid::Uuid::new_v4().to_string(),
            blob_uri: format!("s3://{}/test/{filename}", self.env.get("S3_BUCKET").map(String::as_str).unwrap_or("rag-engine")),
            filename: filename.to_string(),
            content_type: "text/plain".into(),
            size_bytes: 3,
            sha256: "0".repeat(64),
            uploaded_by: "test".into(),
            metadata: HashMap::new(),
            revision: 1,
            replaces_sha256: None,
        }
    }

    pub fn blob_store(&self) -> rag_blobs::BlobStore {
        rag_blobs::BlobStore::new(&rag_blobs::BlobConfig {
            endpoint: self.env["S3_ENDPOINT"].clone(),
            region: "us-east-1".into(),
            bucket: self.env["S3_BUCKET"].clone(),
            access_key: self.env["S3_ACCESS_KEY"].clone(),
            secret_key: self.env["S3_SECRET_KEY"].clone().into(),
            // What the server holds, not what this store wrote.
            cache_bytes: 0,
        })
    }

    /// Drops the test's database and deletes its topics and consumer
    /// groups: a broker keeping every test's topics slows down as they pile
    /// up (measured on tansu: thousands of topics made the suite ~40 % slower).
    pub async fn cleanup(self) {
        let apps: Vec<_> = std::mem::take(&mut *self.live_apps.lock().unwrap());
        for (shutdown, tasks) in apps {
            shutdown.cancel();
            let mut tasks = tasks.lock().await;
            while tasks.join_next().await.is_some() {}
        }
        let bus = self.bus();
        let groups: Vec<String> =
            rag_chunking::profiles().iter().flat_map(rag_stages::pipeline).map(|stage| bus.group_of(&stage.group)).collect();
        if let Err(e) = rag_bus::admin::delete_deployment(&bus, &groups).await {
            eprintln!("test cleanup: deleting topics of {}: {e}", self.prefix);
        }
        self.db.drop_database().await;
    }
}

async fn output_of(mut command: Command) -> (bool, String, String) {
    let out = command.stdin(Stdio::null()).output().await.unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string())
}

/// A fresh directory under the system's temporary directory, named
/// `<prefix>-<random>`, removed with everything in it when the guard drops:
/// tests write files of up to 20 MiB, and runs that left them behind
/// filled the disk CI shares.
pub fn scratch_dir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("{prefix}-")).tempdir().unwrap()
}
