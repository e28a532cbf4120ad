use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;

use rag_app::config::{BlobSettings, DatabaseSettings, KafkaSettings};

#[derive(Subcommand, Debug)]
pub enum TopicsCommand {
    /// Create every event topic and its `.dlq` (never expiring). Idempotent.
    Ensure,
    /// List our topics with their partition counts.
    List {
        #[arg(long)]
        json: bool,
    },
}

pub async fn migrate(s: &DatabaseSettings) -> anyhow::Result<ExitCode> {
    let pool = rag_store::connect(&s.store()).await.context("connecting to Postgres (DATABASE_URL)")?;
    rag_store::migrate(&pool).await.context("applying migrations")?;
    eprintln!("migrations applied");
    Ok(ExitCode::SUCCESS)
}

/// What `init` creates things in: the broker, the database, the bucket.
#[derive(clap::Args, Debug)]
pub struct InitSettings {
    #[command(flatten)]
    pub kafka: KafkaSettings,
    #[command(flatten)]
    pub database: DatabaseSettings,
    #[command(flatten)]
    pub blobs: BlobSettings,
}

pub async fn init(s: &InitSettings) -> anyhow::Result<ExitCode> {
    let created = rag_bus::admin::ensure_topics(&s.kafka.client_bus()?).await.context("creating topics (KAFKA_BROKERS)")?;
    eprintln!("topics: {} created, {} in all", created.len(), s.kafka.topics().all().len());
    rag_blobs::BlobStore::new(&s.blobs.blobs()).ensure_bucket().await.context("creating the bucket (S3_ENDPOINT)")?;
    eprintln!("bucket {} ready", s.blobs.s3_bucket);
    migrate(&s.database).await
}

pub async fn topics(s: &KafkaSettings, cmd: TopicsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        TopicsCommand::Ensure => {
            let created = rag_bus::admin::ensure_topics(&s.client_bus()?).await.context("creating topics")?;
            for t in &created {
                eprintln!("created {t}");
            }
            eprintln!("topics: {} created, {} in all", created.len(), s.topics().all().len());
        }
        TopicsCommand::List { json } => {
            let bus = s.client_bus()?;
            let topics = tokio::task::spawn_blocking(move || rag_bus::admin::describe_topics(&bus)).await??;
            if json {
                let v: Vec<_> = topics.iter().map(|(t, p)| serde_json::json!({"topic": t, "partitions": p})).collect();
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                for (t, p) in topics {
                    println!("{t:<40} {p} partitions");
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
