//! `rag-engine dlq`: list, show and redrive dead letters. A dead letter is
//! the original record (key, payload, headers) plus `dlq-*` headers saying
//! which stage gave up on it and why; redriving re-produces it on its
//! original topic, where every stage sees it again (effects are idempotent).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Subcommand;
use rag_bus::admin::read_topic;
use rag_bus::{headers, EventProducer, Inbound};
use rag_events::{Codec, Topics};
use serde_json::{json, Value};

use rag_app::config::Settings;

#[derive(Subcommand, Debug)]
pub enum DlqCommand {
    /// List the dead letters of a topic (e.g. `documents.parsed`), oldest first.
    List {
        /// The topic whose dead letters to read (with or without `.dlq`; the TOPIC_PREFIX is added).
        #[arg(long)]
        topic: String,
        #[arg(long)]
        json: bool,
    },
    /// Show one dead letter: why it failed, its headers and the decoded event.
    Show {
        #[arg(long)]
        topic: String,
        #[arg(long, default_value_t = 0)]
        partition: i32,
        #[arg(long)]
        offset: i64,
        #[arg(long)]
        json: bool,
    },
    /// Produce dead letters again on their original topic, once the cause is fixed.
    Redrive {
        #[arg(long)]
        topic: String,
        /// Only the dead letter in this partition (with --offset).
        #[arg(long, requires = "offset")]
        partition: Option<i32>,
        /// Only the dead letter at this offset (with --partition, default 0).
        #[arg(long)]
        offset: Option<i64>,
        /// Every dead letter of the topic.
        #[arg(long, conflicts_with = "offset")]
        all: bool,
        #[arg(long)]
        json: bool,
    },
}

fn dlq_topic(topics: &Topics, topic: &str) -> String {
    let base = topic.strip_suffix(".dlq").unwrap_or(topic);
    let prefixed = if !topics.prefix().is_empty() && base.starts_with(topics.prefix()) {
        base.to_string()
    } else {
        format!("{}{base}", topics.prefix())
    };
    Topics::dlq_of(&prefixed)
}

fn summary(r: &Inbound, codec: &Codec) -> Value {
    let h = |name: &str| r.header_str(name);
    let event_type =
        h(headers::EVENT_TYPE).or_else(|| r.payload.as_deref().and_then(|p| codec.decode_any(p).ok()).map(|e| e.event_type().to_string()));
    json!({
        "partition": r.partition,
        "offset": r.offset,
        "key": r.key.as_deref().map(String::from_utf8_lossy),
        "event_type": event_type,
        "event_id": h(headers::EVENT_ID),
        "workspace_id": h(headers::WORKSPACE_ID),
        "stage": h(headers::DLQ_STAGE),
        "reason_code": h(headers::DLQ_REASON_CODE),
        "reason": h(headers::DLQ_REASON),
        "original_topic": h(headers::DLQ_ORIGINAL_TOPIC),
        "original_partition": h(headers::DLQ_ORIGINAL_PARTITION).and_then(|v| v.parse::<i32>().ok()),
        "original_offset": h(headers::DLQ_ORIGINAL_OFFSET).and_then(|v| v.parse::<i64>().ok()),
        "failed_at": h(headers::DLQ_FAILED_AT).and_then(|v| v.parse::<i64>().ok())
            .and_then(chrono::DateTime::from_timestamp_millis).map(|t| t.to_rfc3339()),
    })
}

fn detail(r: &Inbound, codec: &Codec) -> Value {
    let mut v = summary(r, codec);
    v["headers"] = r
        .headers
        .iter()
        .map(|(k, val)| (k.clone(), Value::from(String::from_utf8_lossy(val).into_owned())))
        .collect::<serde_json::Map<_, _>>()
        .into();
    let payload = r.payload.as_deref().unwrap_or_default();
    v["payload_bytes"] = payload.len().into();
    match codec.decode_any(payload) {
        Ok(event) => v["event"] = serde_json::to_value(&event).unwrap_or(Value::Null),
        Err(e) => {
            v["decode_error"] = e.to_string().into();
            let head: String = payload.iter().take(64).map(|b| format!("{b:02x}")).collect();
            v["payload_hex_prefix"] = head.into();
        }
    }
    v
}

pub async fn dlq(s: &Settings, cmd: DlqCommand) -> anyhow::Result<ExitCode> {
    let bus = s.bus();
    let codec = Codec::embedded()?;
    let read = |topic: String| {
        let bus = bus.clone();
        async move { read_topic(&bus, &topic, Duration::from_secs(60)).await.with_context(|| format!("reading {topic} (KAFKA_BROKERS)")) }
    };
    match cmd {
        DlqCommand::List { topic, json } => {
            let dlq = dlq_topic(&bus.topics, &topic);
            let records = read(dlq.clone()).await?;
            let rows: Vec<Value> = records.iter().map(|r| summary(r, &codec)).collect();
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else if rows.is_empty() {
                println!("no dead letters in {dlq}");
            } else {
                println!("{:>4} {:>8}  {:<10} {:<18} {:<24} REASON", "PART", "OFFSET", "STAGE", "EVENT", "CODE");
                for r in &rows {
                    let reason: String = r["reason"].as_str().unwrap_or("-").chars().take(100).collect();
                    println!(
                        "{:>4} {:>8}  {:<10} {:<18} {:<24} {reason}",
                        r["partition"],
                        r["offset"],
                        r["stage"].as_str().unwrap_or("-"),
                        r["event_type"].as_str().unwrap_or("?"),
                        r["reason_code"].as_str().unwrap_or("-")
                    );
                }
                println!("{} dead letter(s) in {dlq}", rows.len());
            }
        }
        DlqCommand::Show { topic, partition, offset, json } => {
            let dlq = dlq_topic(&bus.topics, &topic);
            let records = read(dlq.clone()).await?;
            let r = records
                .iter()
                .find(|r| r.partition == partition && r.offset == offset)
                .with_context(|| format!("no dead letter at {dlq} partition {partition} offset {offset}"))?;
            let v = detail(r, &codec);
            if json {
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                println!("dead letter {dlq}/{partition}/{offset}");
                for key in [
                    "event_type",
                    "event_id",
                    "workspace_id",
                    "key",
                    "stage",
                    "reason_code",
                    "reason",
                    "original_topic",
                    "original_partition",
                    "original_offset",
                    "failed_at",
                ] {
                    println!(
                        "{key:>18}: {}",
                        match &v[key] {
                            Value::String(s) => s.clone(),
                            Value::Null => "-".into(),
                            other => other.to_string(),
                        }
                    );
                }
                match (&v["event"], &v["decode_error"]) {
                    (Value::Null, err) => println!(
                        "\nthe payload does not decode: {}\nfirst bytes: {}",
                        err.as_str().unwrap_or("-"),
                        v["payload_hex_prefix"].as_str().unwrap_or("")
                    ),
                    (event, _) => println!("\n{}", serde_json::to_string_pretty(event)?),
                }
            }
        }
        DlqCommand::Redrive { topic, partition, offset, all, json } => {
            if !all && offset.is_none() {
                anyhow::bail!("say which dead letters: --offset N [--partition P], or --all");
            }
            let dlq = dlq_topic(&bus.topics, &topic);
            let records = read(dlq.clone()).await?;
            let selected: Vec<&Inbound> =
                records.iter().filter(|r| all || (Some(r.offset) == offset && r.partition == partition.unwrap_or(0))).collect();
            if selected.is_empty() {
                anyhow::bail!("no matching dead letter in {dlq}");
            }
            let producer = EventProducer::new(&bus, codec.clone(), "rag-engine/dlq-redrive")?;
            let mut done = Vec::new();
            for r in selected {
                let target = r.header_str(headers::DLQ_ORIGINAL_TOPIC).unwrap_or_else(|| dlq.trim_end_matches(".dlq").to_string());
                let mut hdrs: Vec<(String, Vec<u8>)> =
                    r.headers.iter().filter(|(k, _)| !k.starts_with("dlq-") && k != headers::REDRIVEN_FROM).cloned().collect();
                hdrs.push((headers::REDRIVEN_FROM.into(), format!("{dlq}/{}/{}", r.partition, r.offset).into_bytes()));
                let delivered = producer
                    .send_raw(&target, r.key.as_deref(), r.payload.as_deref().unwrap_or_default(), &hdrs)
                    .await
                    .with_context(|| format!("producing to {target}"))?;
                done.push(json!({"from": {"partition": r.partition, "offset": r.offset}, "topic": target,
                                 "partition": delivered.partition, "offset": delivered.offset}));
                if !json {
                    println!("redriven {dlq}/{}/{} -> {target}/{}/{}", r.partition, r.offset, delivered.partition, delivered.offset);
                }
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&done)?);
            } else {
                println!("{} dead letter(s) redriven", done.len());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
