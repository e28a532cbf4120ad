//! What a chaos trial counts once the pipeline settled.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use rag_bus::{headers, BusConfig};
use rag_events::EventType;
use serde_json::json;

use rag_store::audit::RowProblem;

use rag_store::documents::DocumentStatus;
use rag_store::messages::MessageStatus;

use super::corpus::Expect;

/// Whether the trial knows every question it asked, or only those whose
/// request was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuestionsKnown {
    All,
    Some,
}

#[derive(Default)]
struct Tally {
    lost: Vec<String>,
    stuck: Vec<String>,
    wrong_state: Vec<String>,
    doubled: Vec<String>,
    missing_rows: Vec<String>,
}

/// Documents, answers and dead letters against what the trial produced.
pub async fn check(
    pool: &rag_store::sqlx::PgPool,
    bus: &BusConfig,
    expected: &HashMap<String, Expect>,
    questions: &[String],
    questions_known: QuestionsKnown,
    poison: &[(i32, i64)],
) -> anyhow::Result<serde_json::Value> {
    let mut t = Tally::default();
    let audits: HashMap<String, rag_store::audit::DocumentAudit> =
        rag_store::audit::documents(pool, None).await?.into_iter().map(|a| (a.id.to_string(), a)).collect();
    for (id, expect) in expected {
        let Some(a) = audits.get(id) else {
            t.lost.push(id.clone());
            continue;
        };
        let want = match expect {
            Expect::Ingested => DocumentStatus::Ingested,
            Expect::Failed => DocumentStatus::Failed,
            Expect::Deleted => DocumentStatus::Deleted,
        };
        match a.status {
            s if s.in_progress() => t.stuck.push(format!("{id} ({s})")),
            s if s != want => t.wrong_state.push(format!("{id}: {s}, expected {want}")),
            DocumentStatus::Ingested => {
                for problem in a.row_problems() {
                    match problem {
                        RowProblem::Doubled(line) => t.doubled.push(line),
                        RowProblem::Missing(line) => t.missing_rows.push(line),
                    }
                }
            }

            _ => {}
        }
    }
    for id in audits.keys().filter(|id| !expected.contains_key(*id)) {
        t.doubled.push(format!("{id}: a document nobody uploaded"));
    }
    // A deleted document leaves no row behind, in any version or revision.
    for (id, search, mappings, segments) in rag_store::audit::left_by_deleted(pool).await? {
        t.doubled.push(format!("{id}: deleted, still {search} search rows, {mappings} chunk mappings, {segments} segments"));
    }

    let messages = rag_store::audit::messages(pool).await?;
    let assistant: HashMap<String, MessageStatus> =
        messages.iter().filter(|(_, r, _)| r == "assistant").map(|(id, _, s)| (id.to_string(), *s)).collect();
    let users = messages.iter().filter(|(_, r, _)| r == "user").count();
    let mut questions_lost = 0;
    let mut questions_stuck = 0;
    for q in questions {
        match assistant.get(q) {
            None => questions_lost += 1,
            Some(MessageStatus::Pending) => questions_stuck += 1,
            Some(_) => {}
        }
    }
    let questions_doubled = match questions_known {
        // Every question the trial asked is known: any other row is extra.
        QuestionsKnown::All => (assistant.len() + users).saturating_sub(2 * questions.len()),
        // Some questions reached the log although their request failed (the
        // soak's doors): each question still has one user message and one
        // answer.
        QuestionsKnown::Some => users.abs_diff(assistant.len()),
    };
    let questions_failed = assistant.values().filter(|s| **s == MessageStatus::Failed).count();

    // Dead letters: exactly the poison, from each stage that reads uploads.
    let uploads = bus.topics.of(EventType::DocumentUploaded);
    let poison_places: BTreeSet<(i32, i64)> = poison.iter().copied().collect();
    let mut by_stage: BTreeMap<String, Vec<(i32, i64)>> = BTreeMap::new();
    let mut unexpected = Vec::new();
    for topic in bus.topics.all().into_iter().filter(|t| !t.ends_with(".dlq")) {
        let dlq = rag_events::Topics::dlq_of(&topic);
        for r in rag_bus::admin::read_topic(bus, &dlq, Duration::from_secs(60)).await? {
            let num = |h: &str| r.header_str(h).and_then(|v| v.parse::<i64>().ok()).unwrap_or(-1);
            let place = (num(headers::DLQ_ORIGINAL_PARTITION) as i32, num(headers::DLQ_ORIGINAL_OFFSET));
            let stage = r.header_str(headers::DLQ_STAGE).unwrap_or_default();
            if topic == uploads && poison_places.contains(&place) {
                by_stage.entry(stage).or_default().push(place);
            } else {
                let reason = r.header_str(headers::DLQ_REASON).unwrap_or_default();
                unexpected.push(format!("{topic}[{}]@{} by {stage}: {reason}", place.0, place.1));
            }
        }
    }
    let mut dlq_exact = !poison.is_empty();
    let mut dlq_duplicates = 0;
    for stage in ["parser", "projector"] {
        let got = by_stage.get(stage).cloned().unwrap_or_default();
        let distinct: BTreeSet<(i32, i64)> = got.iter().copied().collect();
        dlq_exact &= distinct == poison_places;
        dlq_duplicates += got.len() - distinct.len();
    }

    let ok = t.lost.is_empty()
        && t.stuck.is_empty()
        && t.wrong_state.is_empty()
        && t.doubled.is_empty()
        && t.missing_rows.is_empty()
        && questions_lost == 0
        && questions_stuck == 0
        && questions_doubled == 0
        && dlq_exact
        && unexpected.is_empty();
    let sample = |v: &Vec<String>| v.iter().take(10).cloned().collect::<Vec<_>>();
    Ok(json!({
        "ok": ok,
        "lost": t.lost.len() + questions_lost,
        "doubled": t.doubled.len() + questions_doubled,
        "stuck": t.stuck.len() + questions_stuck,
        "documents": {"lost": sample(&t.lost), "stuck": sample(&t.stuck), "wrong_state": sample(&t.wrong_state),
            "doubled": sample(&t.doubled), "missing_rows": sample(&t.missing_rows)},
        "questions": {"lost": questions_lost, "stuck": questions_stuck, "doubled": questions_doubled, "failed": questions_failed},
        "dead_letters": {"exactly_the_poison": dlq_exact, "redelivered_copies": dlq_duplicates, "unexpected": unexpected},
    }))
}

/// The followed folder after the faults: each file exactly one live
/// document, ingested, whose searchable revision is its newest; the edited
/// files' text the edited one, in their second revision; no unchanged file
/// given a second revision.
pub async fn sources(
    pool: &rag_store::sqlx::PgPool,
    workspace: &str,
    source: uuid::Uuid,
    files: usize,
    edited: &[usize],
    key: fn(usize) -> String,
) -> anyhow::Result<serde_json::Value> {
    let docs = rag_store::documents::list(pool, workspace).await?;
    let mut wrong = Vec::new();
    for i in 0..files {
        let k = key(i);
        let live: Vec<_> = docs.iter().filter(|d| d.metadata["source_key"] == k.as_str()).collect();
        let [d] = live.as_slice() else {
            wrong.push(format!("{k}: {} live documents", live.len()));
            continue;
        };
        let want = if edited.contains(&i) { 2 } else { 1 };
        if d.status != DocumentStatus::Ingested || d.revision != Some(d.latest_revision) || d.latest_revision != want {
            wrong.push(format!("{k}: {} revision {:?} of {}, expected {want}", d.status, d.revision, d.latest_revision));
            continue;
        }
        let text: String = rag_store::raw::full_text(pool, workspace, d.id, None).await?.unwrap_or_default().into_iter().collect();
        if text.contains("đã sửa") != edited.contains(&i) {
            wrong.push(format!("{k}: the text of the wrong revision"));
        }
    }
    let pending = rag_store::sources::files(pool, source).await?.iter().filter(|f| f.pending_sha256.is_some()).count();
    Ok(json!({"ok": wrong.is_empty() && pending == 0, "files": files, "edited": edited.len(), "wrong": wrong, "pending": pending}))
}
