//! The delivery invariants, as pure functions over what the log and the
//! read models hold (gathered by `verify`):
//!
//! - no consumer position is past its partition's log end;
//! - every `DocumentUploaded` ends in a terminal document state, or one of
//!   the document's events is still ahead of a group that consumes it
//!   (covered by lag);
//! - every `QuestionAsked` gets an answer, with the same proviso.

use std::collections::{BTreeMap, HashMap};

use rag_store::documents::DocumentStatus;
use rag_store::messages::MessageStatus;
use serde::Serialize;

/// A document or a question (by its assistant message).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", content = "id", rename_all = "snake_case")]
pub enum Item {
    Document(String),
    Question(String),
}

/// Where a record sits in the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Place {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
}

/// One record of the pipeline's topics, attributed to its item.
#[derive(Debug, Clone)]
pub struct ItemRecord {
    pub item: Item,
    pub workspace_id: String,
    pub place: Place,
    /// The record that starts the item's chain (`DocumentUploaded`,
    /// `QuestionAsked`): what a repair re-drives.
    pub root: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Owner {
    /// Kafka's committed offsets.
    Kafka,
    /// The stage's own table (`consumer_offsets`), written with its rows.
    Postgres,
}

/// A consumer group reading a topic, with its next offset per partition.
#[derive(Debug, Clone)]
pub struct Reader {
    pub group: String,
    pub owner: Owner,
    /// Partitions it never stored a position for start at the beginning.
    pub next: HashMap<i32, i64>,
}

impl Reader {
    fn next_of(&self, partition: i32) -> i64 {
        self.next.get(&partition).copied().unwrap_or(0)
    }
}

/// A position past the log end: the next record produced there would be skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PositionPastEnd {
    pub group: String,
    pub owner: Owner,
    pub topic: String,
    pub partition: i32,
    pub position: i64,
    pub log_end: i64,
}

/// An item in a non-terminal state that nothing will move on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stuck {
    pub item: Item,
    pub workspace_id: String,
    /// Its state in the read model (`None`: no row at all).
    pub status: Option<ItemStatus>,
    /// The record a repair re-drives.
    pub root: Place,
}

/// What was checked and what is wrong.
#[derive(Debug, Default, Serialize)]
pub struct Findings {
    pub documents_checked: usize,
    pub questions_checked: usize,
    pub covered_by_lag: usize,
    pub positions_past_end: Vec<PositionPastEnd>,
    pub stuck: Vec<Stuck>,
}

impl Findings {
    pub fn clean(&self) -> bool {
        self.positions_past_end.is_empty() && self.stuck.is_empty()
    }
}

/// An item's state in the read model: a document's, or the status of a
/// question's assistant message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ItemStatus {
    Document(DocumentStatus),
    Question(MessageStatus),
}

impl ItemStatus {
    /// Nothing moves the item on from here.
    pub fn is_terminal(self) -> bool {
        match self {
            ItemStatus::Document(s) => !s.in_progress(),
            ItemStatus::Question(s) => s != MessageStatus::Pending,
        }
    }
}

impl std::fmt::Display for ItemStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ItemStatus::Document(s) => s.fmt(f),
            ItemStatus::Question(s) => s.fmt(f),
        }
    }
}

/// Every position past its partition's log end. `ends`: (topic, partition) -> log end.
pub fn positions_past_end(readers: &BTreeMap<String, Vec<Reader>>, ends: &HashMap<(String, i32), i64>) -> Vec<PositionPastEnd> {
    let mut out = Vec::new();
    for (topic, readers) in readers {
        for reader in readers {
            let mut partitions: Vec<_> = reader.next.iter().collect();
            partitions.sort();
            for (partition, position) in partitions {
                let log_end = ends.get(&(topic.clone(), *partition)).copied().unwrap_or(0);
                if *position > log_end {
                    out.push(PositionPastEnd {
                        group: reader.group.clone(),
                        owner: reader.owner,
                        topic: topic.clone(),
                        partition: *partition,
                        position: *position,
                        log_end,
                    });
                }
            }
        }
    }
    out
}

/// Items not in a terminal state whose every record every consuming group
/// has moved past. `status`: the read model's state per item.
pub fn find_stuck(records: &[ItemRecord], readers: &BTreeMap<String, Vec<Reader>>, status: &HashMap<Item, ItemStatus>) -> Findings {
    let mut by_item: BTreeMap<&Item, Vec<&ItemRecord>> = BTreeMap::new();
    for r in records {
        by_item.entry(&r.item).or_default().push(r);
    }
    let mut findings = Findings::default();
    for (item, recs) in by_item {
        // Only items whose chain starts in the log are checked.
        let Some(root) = recs.iter().filter(|r| r.root).max_by_key(|r| (r.place.partition, r.place.offset)) else { continue };
        match item {
            Item::Document(_) => findings.documents_checked += 1,
            Item::Question(_) => findings.questions_checked += 1,
        }
        let state = status.get(item);
        if state.is_some_and(|s| s.is_terminal()) {
            continue;
        }
        let pending = recs
            .iter()
            .any(|r| readers.get(&r.place.topic).is_some_and(|rs| rs.iter().any(|g| g.next_of(r.place.partition) <= r.place.offset)));
        if pending {
            findings.covered_by_lag += 1;
            continue;
        }
        findings.stuck.push(Stuck {
            item: item.clone(),
            workspace_id: root.workspace_id.clone(),
            status: state.copied(),
            root: root.place.clone(),
        });
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(item: &Item, topic: &str, partition: i32, offset: i64, root: bool) -> ItemRecord {
        ItemRecord { item: item.clone(), workspace_id: "ws".into(), place: Place { topic: topic.into(), partition, offset }, root }
    }

    fn reader(group: &str, owner: Owner, next: &[(i32, i64)]) -> Reader {
        Reader { group: group.into(), owner, next: next.iter().copied().collect() }
    }

    fn readers(list: Vec<(&str, Vec<Reader>)>) -> BTreeMap<String, Vec<Reader>> {
        list.into_iter().map(|(t, r)| (t.to_string(), r)).collect()
    }

    #[test]
    fn a_document_every_group_moved_past_is_stuck() {
        let doc = Item::Document("d1".into());
        let records = vec![rec(&doc, "documents.uploaded", 0, 3, true)];
        let rs = readers(vec![(
            "documents.uploaded",
            vec![reader("parser", Owner::Kafka, &[(0, 5)]), reader("projector", Owner::Postgres, &[(0, 5)])],
        )]);
        let status = HashMap::from([(doc.clone(), ItemStatus::Document(DocumentStatus::Uploaded))]);
        let f = find_stuck(&records, &rs, &status);
        assert_eq!(f.stuck.len(), 1);
        assert_eq!(f.stuck[0].root, Place { topic: "documents.uploaded".into(), partition: 0, offset: 3 });
        assert_eq!(f.stuck[0].status, Some(ItemStatus::Document(DocumentStatus::Uploaded)));
        assert!(!f.clean());
    }

    #[test]
    fn a_document_still_ahead_of_a_group_is_covered_by_lag() {
        let doc = Item::Document("d1".into());
        let records = vec![rec(&doc, "documents.uploaded", 0, 3, true), rec(&doc, "documents.parsed", 1, 0, false)];
        let rs = readers(vec![
            ("documents.uploaded", vec![reader("parser", Owner::Kafka, &[(0, 4)])]),
            // The chunker has not reached the parsed event yet.
            ("documents.parsed", vec![reader("chunker", Owner::Kafka, &[])]),
        ]);
        let status = HashMap::from([(doc.clone(), ItemStatus::Document(DocumentStatus::Parsed))]);
        let f = find_stuck(&records, &rs, &status);
        assert!(f.stuck.is_empty());
        assert_eq!(f.covered_by_lag, 1);
    }

    #[test]
    fn terminal_items_are_never_stuck_and_missing_rows_are() {
        let done = Item::Document("done".into());
        let missing = Item::Question("m1".into());
        let records = vec![rec(&done, "documents.uploaded", 0, 0, true), rec(&missing, "questions.asked", 0, 0, true)];
        let rs = readers(vec![
            ("documents.uploaded", vec![reader("parser", Owner::Kafka, &[(0, 1)])]),
            ("questions.asked", vec![reader("answerer", Owner::Kafka, &[(0, 1)])]),
        ]);
        let status = HashMap::from([(done.clone(), ItemStatus::Document(DocumentStatus::Ingested))]);
        let f = find_stuck(&records, &rs, &status);
        assert_eq!(f.documents_checked, 1);
        assert_eq!(f.questions_checked, 1);
        assert_eq!(f.stuck.len(), 1);
        assert_eq!(f.stuck[0].item, missing);
        assert_eq!(f.stuck[0].status, None);
    }

    #[test]
    fn the_latest_root_is_the_one_redriven() {
        let q = Item::Question("m".into());
        let records = vec![rec(&q, "questions.asked", 2, 1, true), rec(&q, "questions.asked", 2, 9, true)];
        let rs = readers(vec![("questions.asked", vec![reader("answerer", Owner::Kafka, &[(2, 10)])])]);
        let status = HashMap::from([(q.clone(), ItemStatus::Question(MessageStatus::Pending))]);
        let f = find_stuck(&records, &rs, &status);
        assert_eq!(f.stuck[0].root.offset, 9);
    }

    #[test]
    fn a_position_past_the_log_end_is_reported() {
        let rs = readers(vec![(
            "documents.uploaded",
            vec![reader("parser", Owner::Kafka, &[(0, 4), (1, 2)]), reader("projector", Owner::Postgres, &[(0, 3)])],
        )]);
        let ends = HashMap::from([(("documents.uploaded".to_string(), 0), 3), (("documents.uploaded".to_string(), 1), 2)]);
        let past = positions_past_end(&rs, &ends);
        assert_eq!(past.len(), 1);
        assert_eq!((past[0].group.as_str(), past[0].partition, past[0].position, past[0].log_end), ("parser", 0, 4, 3));
    }
}
