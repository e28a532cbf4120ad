//! `rag-dev bench hops`: how long one event takes from stage to stage
//! when nothing queues. Documents go one at a time (each upload waits for
//! the previous document to settle); each hop is the difference of the
//! producer timestamps of a document's consecutive events, read back from
//! the run's topics with a plain consumer.

use std::collections::HashMap;
use std::time::Duration;

use clap::Args;
use rag_events::EventType;
use serde::Serialize;

use super::ingest::{corpus, percentile, IngestArgs};
use crate::ingest::{ingest, IngestOptions};
use rag_app::config::Settings;

#[derive(Args, Debug, Clone)]
pub struct HopsArgs {
    /// Documents, one after the other.
    #[arg(long, default_value_t = 20)]
    pub documents: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Hop {
    /// The stage between the two events.
    pub stage: &'static str,
    pub from: &'static str,
    pub to: &'static str,
    pub p50_ms: f64,
    pub max_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct HopsReport {
    pub documents: usize,
    pub hops: Vec<Hop>,
    /// DocumentUploaded produced to DocumentIngested produced.
    pub uploaded_to_ingested_p50_ms: f64,
}

const CHAIN: [(&str, EventType); 4] = [
    ("", EventType::DocumentUploaded),
    ("parser", EventType::DocumentParsed),
    ("chunker", EventType::DocumentChunked),
    ("indexer", EventType::DocumentIngested),
];

pub async fn run(s: &Settings, args: &HopsArgs, quiet: bool) -> anyhow::Result<HopsReport> {
    eprintln!("bench hops: {} one-page documents, one at a time", args.documents);
    let corpus_args = IngestArgs { documents: args.documents, pages: 1, paragraphs: 6, concurrency: 1, replay_profile: None };
    let options = IngestOptions { one_at_a_time: true, ..IngestOptions::new(1, quiet) };
    let run = ingest(s, "bench", args.documents, options, corpus(&corpus_args)).await?;
    let report = measure(&run, args.documents).await;
    run.discard().await;
    report
}

async fn measure(run: &crate::ingest::IngestRun, documents: usize) -> anyhow::Result<HopsReport> {
    let bus = run.settings.bus();
    let topics = run.settings.topics();
    // document id -> producer time of each event of the chain (first record).
    let mut times: HashMap<Vec<u8>, [Option<i64>; 4]> = HashMap::new();
    for (i, (_, event)) in CHAIN.iter().enumerate() {
        for record in rag_bus::admin::read_topic(&bus, &topics.of(*event), Duration::from_secs(30)).await? {
            let (Some(key), Some(at)) = (record.key, record.timestamp_ms) else { continue };
            let slot = &mut times.entry(key).or_default()[i];
            if slot.is_none() {
                *slot = Some(at);
            }
        }
    }
    let mut hops = Vec::new();
    for i in 1..CHAIN.len() {
        let mut ms: Vec<f64> = times.values().filter_map(|t| Some((t[i]? - t[i - 1]?) as f64)).collect();
        ms.sort_by(f64::total_cmp);
        hops.push(Hop {
            stage: CHAIN[i].0,
            from: CHAIN[i - 1].1.name(),
            to: CHAIN[i].1.name(),
            p50_ms: percentile(&ms, 0.5),
            max_ms: ms.last().copied().unwrap_or(0.0),
        });
    }
    let mut whole: Vec<f64> = times.values().filter_map(|t| Some((t[3]? - t[0]?) as f64)).collect();
    whole.sort_by(f64::total_cmp);
    Ok(HopsReport { documents, hops, uploaded_to_ingested_p50_ms: percentile(&whole, 0.5) })
}

pub fn print(r: &HopsReport) {
    println!("stage hops ({} documents one at a time; producer timestamps)", r.documents);
    for h in &r.hops {
        println!("  {:<8} {} -> {}   p50 {:.0} ms   max {:.0} ms", h.stage, h.from, h.to, h.p50_ms, h.max_ms);
    }
    println!("  uploaded -> ingested event  p50 {:.0} ms", r.uploaded_to_ingested_p50_ms);
}
