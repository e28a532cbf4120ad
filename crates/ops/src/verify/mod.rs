//! `rag-engine verify`: compares the log with the read models.
//!
//! Reads every pipeline topic without a consumer group (nothing committed,
//! no stage disturbed), every group's positions (Kafka's committed offsets
//! and the Postgres-owned ones), and the documents' and messages' states,
//! then checks the invariants of [`invariants`]. `--repair` re-produces the
//! record that starts each stuck item's chain (its `DocumentUploaded` or
//! `QuestionAsked`, unchanged, plus a `redriven-from` header): every effect
//! downstream is idempotent, so a repair twice changes nothing more, and an
//! item already re-driven is covered by lag until the stages reach it.

pub mod invariants;

use std::collections::{BTreeMap, HashMap};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use rag_bus::admin::{committed_offsets, read_topic, watermarks};
use rag_bus::{headers, BusConfig, EventProducer, Inbound};
use rag_events::{AnyEvent, Codec, EventType};
use serde_json::json;

use invariants::{find_stuck, positions_past_end, Item, ItemRecord, ItemStatus, Owner, Place, Reader};
use rag_app::config::Settings;

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Re-drive what is stuck (idempotent): re-produce each stuck item's first event.
    #[arg(long)]
    repair: bool,
    #[arg(long)]
    json: bool,
}

/// The topics whose records belong to a document or a question, and the
/// groups that consume each (with who owns their positions), from what
/// each stage declares it consumes.
/// Each event type with its consuming groups and who owns their positions.
type Consumers = Vec<(EventType, Vec<(String, Owner)>)>;

fn consumers(s: &Settings) -> anyhow::Result<Consumers> {
    let bus = s.bus();
    let stages = rag_stages::pipeline(&s.parsing.chunking_profile()?);
    Ok(rag_stages::projector::ALL_EVENTS
        .iter()
        .map(|event| {
            let groups = stages
                .iter()
                .filter(|stage| stage.consumes.contains(event))
                .map(|stage| {
                    let owner = match stage.positions {
                        rag_bus::Positions::Kafka => Owner::Kafka,
                        rag_bus::Positions::Postgres => Owner::Postgres,
                    };
                    (bus.group_of(&stage.group), owner)
                })
                .collect();
            (*event, groups)
        })
        .collect())
}

/// Attributes a record to its item: a document, or a question by its
/// assistant message. A record that does not decode as its topic's event
/// is no item: the stages dead-letter it (`rag-engine dlq list`).
fn item_of(codec: &Codec, event: EventType, msg: &Inbound) -> Option<Item> {
    let decoded = codec.decode_any(msg.payload.as_deref()?).ok()?;
    if decoded.event_type() != event {
        return None;
    }
    Some(match decoded {
        AnyEvent::QuestionAsked(q) => Item::Question(q.assistant_message_id),
        AnyEvent::AnswerProduced(a) => Item::Question(a.assistant_message_id),
        AnyEvent::DocumentUploaded(e) => Item::Document(e.document_id),
        AnyEvent::DocumentParsed(e) => Item::Document(e.document_id),
        AnyEvent::DocumentChunked(e) => Item::Document(e.document_id),
        AnyEvent::DocumentIngested(e) => Item::Document(e.document_id),
        AnyEvent::DocumentDeleted(e) => Item::Document(e.document_id),
    })
}

struct Gathered {
    records: Vec<ItemRecord>,
    roots: HashMap<(String, i32, i64), Inbound>,
    readers: BTreeMap<String, Vec<Reader>>,
    ends: HashMap<(String, i32), i64>,
    status: HashMap<Item, ItemStatus>,
}

async fn gather(s: &Settings, bus: &BusConfig, pool: &rag_store::sqlx::PgPool) -> anyhow::Result<Gathered> {
    let codec = Codec::embedded()?;
    let mut g =
        Gathered { records: Vec::new(), roots: HashMap::new(), readers: BTreeMap::new(), ends: HashMap::new(), status: HashMap::new() };
    for (event, groups) in consumers(s)? {
        let topic = bus.topics.of(event);
        // Positions first, then the log: a record produced in between is
        // then ahead of every position (covered), never wrongly stuck.
        let mut readers = Vec::new();
        for (group, owner) in groups {
            let next: HashMap<i32, i64> = match owner {
                Owner::Kafka => committed_offsets(bus, &group, &topic)
                    .await
                    .with_context(|| format!("committed offsets of {group} on {topic}"))?
                    .into_iter()
                    .filter_map(|(p, c)| c.map(|c| (p, c)))
                    .collect(),
                Owner::Postgres => rag_store::offsets::list(pool, &group)
                    .await?
                    .into_iter()
                    .filter(|(t, _, _)| *t == topic)
                    .map(|(_, p, n)| (p, n))
                    .collect(),
            };
            readers.push(Reader { group, owner, next });
        }
        g.readers.insert(topic.clone(), readers);
        for (p, _, high) in watermarks(bus, &topic).await.with_context(|| format!("watermarks of {topic}"))? {
            g.ends.insert((topic.clone(), p), high);
        }
        let root = matches!(event, EventType::DocumentUploaded | EventType::QuestionAsked);
        for msg in read_topic(bus, &topic, Duration::from_secs(120)).await.with_context(|| format!("reading {topic}"))? {
            let Some(item) = item_of(&codec, event, &msg) else { continue };
            let place = Place { topic: msg.topic.clone(), partition: msg.partition, offset: msg.offset };
            g.records.push(ItemRecord { item, workspace_id: msg.header_str(headers::WORKSPACE_ID).unwrap_or_default(), place, root });
            if root {
                g.roots.insert((msg.topic.clone(), msg.partition, msg.offset), msg);
            }
        }
    }
    for (id, status) in rag_store::documents::all_statuses(pool).await? {
        g.status.insert(Item::Document(id.to_string()), ItemStatus::Document(status));
    }
    for (id, status) in rag_store::messages::assistant_statuses(pool).await? {
        g.status.insert(Item::Question(id.to_string()), ItemStatus::Question(status));
    }
    Ok(g)
}

pub async fn verify(s: &Settings, args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let bus = s.bus();
    let pool = rag_store::connect(&s.store()).await.context("connecting to Postgres (DATABASE_URL)")?;
    let g = gather(s, &bus, &pool).await?;
    let mut findings = find_stuck(&g.records, &g.readers, &g.status);
    findings.positions_past_end = positions_past_end(&g.readers, &g.ends);

    let mut redriven = Vec::new();
    if args.repair && !findings.stuck.is_empty() {
        let producer = EventProducer::new(&bus, Codec::embedded()?, "rag-engine/verify")?;
        for stuck in &findings.stuck {
            let key = (stuck.root.topic.clone(), stuck.root.partition, stuck.root.offset);
            let Some(msg) = g.roots.get(&key) else { continue };
            let mut hdrs: Vec<(String, Vec<u8>)> = msg.headers.iter().filter(|(k, _)| k != headers::REDRIVEN_FROM).cloned().collect();
            let from = format!("verify/{}/{}/{}", msg.topic, msg.partition, msg.offset);
            hdrs.push((headers::REDRIVEN_FROM.to_string(), from.into_bytes()));
            let payload = msg.payload.clone().unwrap_or_default();
            let landed = producer
                .send_raw(&msg.topic, msg.key.as_deref(), &payload, &hdrs)
                .await
                .with_context(|| format!("re-driving {}[{}]@{}", msg.topic, msg.partition, msg.offset))?;
            redriven.push(json!({"item": stuck.item, "from": stuck.root, "to": {"partition": landed.partition, "offset": landed.offset}}));
        }
    }
    pool.close().await;

    let clean = findings.clean();
    if args.json {
        let mut out = serde_json::to_value(&findings)?;
        out["clean"] = clean.into();
        if args.repair {
            out["redriven"] = redriven.clone().into();
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_findings(&findings, args.repair, &redriven);
    }
    // A repair that re-drove every stuck item succeeded; positions past the
    // log end are corrected by the stage runner when it next takes the
    // partition, so they still fail the check until then.
    let fixed = args.repair && redriven.len() == findings.stuck.len() && findings.positions_past_end.is_empty();
    Ok(if clean || fixed { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn print_findings(f: &invariants::Findings, repair: bool, redriven: &[serde_json::Value]) {
    println!("checked {} documents and {} questions; {} still covered by lag", f.documents_checked, f.questions_checked, f.covered_by_lag);
    if f.positions_past_end.is_empty() {
        println!("positions: none past the log end");
    } else {
        println!("positions past the log end (the next record there would be skipped):");
        for p in &f.positions_past_end {
            println!("  {} ({:?}) {}[{}] at {} > log end {}", p.group, p.owner, p.topic, p.partition, p.position, p.log_end);
        }
    }
    if f.stuck.is_empty() {
        println!("stuck: nothing");
    } else {
        println!("stuck (not terminal, and every group has moved past its events):");
        for st in &f.stuck {
            let (kind, id) = match &st.item {
                Item::Document(id) => ("document", id),
                Item::Question(id) => ("question (assistant message)", id),
            };
            println!(
                "  {kind} {id} workspace {} status {} — first event {}[{}]@{}",
                st.workspace_id,
                st.status.map(|s| s.to_string()).unwrap_or_else(|| "(no row)".into()),
                st.root.topic,
                st.root.partition,
                st.root.offset
            );
        }
        if repair {
            println!("re-driven: {} of {}", redriven.len(), f.stuck.len());
        } else {
            println!("run `rag-engine verify --repair` to re-drive them (idempotent)");
        }
    }
}
