//! Which received records may start now: one lane per partition, so the
//! records of a partition (and so of one document, which is the record key)
//! are processed one after another in offset order, while partitions
//! proceed side by side.
//!
//! Why lanes by partition and not by key: the Postgres-owned positions
//! (projector, indexer) are one `next_offset` per partition, claimed in
//! each record's transaction. A later record committed before an earlier
//! one would move it past the earlier one, which would then be taken for a
//! re-delivery and skipped. In offset order per partition, the committed
//! position is always just past the newest finished record, and every
//! record before it is finished: committing "up to the oldest unfinished"
//! needs no bookkeeping beyond the partition's cursor.
//!
//! Pure bookkeeping, no I/O: the runner asks, the lanes answer.

use std::collections::{HashMap, HashSet, VecDeque};

use super::positions::PartitionKey;

/// What [`Lanes::admit`] did with a record.
#[derive(Debug, PartialEq, Eq)]
pub enum Admitted<T> {
    /// Its lane was idle: start it.
    Start(T),
    /// Queued; `depth`: the lane's queued records, this one included.
    Queued { depth: usize },
}

/// Received records per partition: at most one running, the rest queued.
#[derive(Debug)]
pub struct Lanes<T> {
    queued: HashMap<PartitionKey, VecDeque<T>>,
    running: HashSet<PartitionKey>,
    queued_count: usize,
}

impl<T> Default for Lanes<T> {
    fn default() -> Self {
        Lanes { queued: HashMap::new(), running: HashSet::new(), queued_count: 0 }
    }
}

impl<T> Lanes<T> {
    /// A record of `key` arrived: it may start now (its lane was idle; the
    /// lane is then running), or it was queued behind the lane's running one.
    pub fn admit(&mut self, key: &PartitionKey, item: T) -> Admitted<T> {
        if self.running.contains(key) {
            let queue = self.queued.entry(key.clone()).or_default();
            queue.push_back(item);
            self.queued_count += 1;
            Admitted::Queued { depth: queue.len() }
        } else {
            self.running.insert(key.clone());
            Admitted::Start(item)
        }
    }

    /// The running record of `key` finished. Returns the lane's next record
    /// to start (the lane stays running), or `None` (the lane is idle).
    pub fn finish(&mut self, key: &PartitionKey) -> Option<T> {
        let next = self.queued.get_mut(key).and_then(VecDeque::pop_front);
        match next {
            Some(item) => {
                self.queued_count -= 1;
                Some(item)
            }
            None => {
                self.queued.remove(key);
                self.running.remove(key);
                None
            }
        }
    }

    /// Records queued in `key`'s lane (not counting its running one).
    pub fn queued_in(&self, key: &PartitionKey) -> usize {
        self.queued.get(key).map_or(0, VecDeque::len)
    }

    /// Records running and queued: what back-pressure bounds.
    pub fn buffered(&self) -> usize {
        self.running.len() + self.queued_count
    }

    pub fn running(&self) -> usize {
        self.running.len()
    }

    /// Drops every queued record (after a rebalance they are the new
    /// owner's to fetch again); running ones finish on their own.
    pub fn drop_queued(&mut self) -> usize {
        let dropped = self.queued_count;
        self.queued.clear();
        self.queued_count = 0;
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(p: i32) -> PartitionKey {
        ("documents.parsed".to_string(), p)
    }

    #[test]
    fn records_of_one_partition_run_one_at_a_time_in_arrival_order() {
        let mut lanes = Lanes::default();
        assert_eq!(lanes.admit(&key(0), 10), Admitted::Start(10));
        assert_eq!(lanes.admit(&key(0), 11), Admitted::Queued { depth: 1 });
        assert_eq!(lanes.admit(&key(0), 12), Admitted::Queued { depth: 2 });
        assert_eq!((lanes.running(), lanes.buffered(), lanes.queued_in(&key(0))), (1, 3, 2));
        assert_eq!(lanes.finish(&key(0)), Some(11));
        assert_eq!(lanes.queued_in(&key(0)), 1);
        assert_eq!(lanes.finish(&key(0)), Some(12));
        assert_eq!(lanes.finish(&key(0)), None);
        assert_eq!(lanes.buffered(), 0);
        // Idle again: the next record starts at once.
        assert_eq!(lanes.admit(&key(0), 13), Admitted::Start(13));
    }

    #[test]
    fn partitions_run_side_by_side() {
        let mut lanes = Lanes::default();
        assert_eq!(lanes.admit(&key(0), 1), Admitted::Start(1));
        assert_eq!(lanes.admit(&key(1), 1), Admitted::Start(1));
        assert_eq!(lanes.admit(&key(0), 2), Admitted::Queued { depth: 1 });
        assert_eq!(lanes.queued_in(&key(1)), 0);
        assert_eq!(lanes.running(), 2);
        // Partition 1 finishing does not release partition 0's queue.
        assert_eq!(lanes.finish(&key(1)), None);
        assert_eq!(lanes.buffered(), 2);
        assert_eq!(lanes.finish(&key(0)), Some(2));
    }

    #[test]
    fn queued_records_are_dropped_and_running_ones_finish() {
        let mut lanes = Lanes::default();
        lanes.admit(&key(0), 1);
        lanes.admit(&key(0), 2);
        lanes.admit(&key(0), 3);
        assert_eq!(lanes.drop_queued(), 2);
        assert_eq!(lanes.buffered(), 1);
        assert_eq!(lanes.finish(&key(0)), None);
        assert_eq!(lanes.buffered(), 0);
    }
}
