//! Which partitions a stage instance owns and where each one stands.
//!
//! Pure bookkeeping, no I/O, so the offset rules are tested directly:
//!
//! - A partition handed over by the group is not fetched from until the
//!   runner has decided where it resumes ([`PartitionBook::assign`] leaves it
//!   pending; [`PartitionBook::positioned`] makes it owned). Nothing is read
//!   from a position nobody chose.
//! - The offset stored for commit is always the *next* offset to process,
//!   and only for a partition still owned, after its record took effect
//!   ([`PartitionBook::processed`]).
//! - A rebalance in between makes earlier decisions stale: every assignment
//!   and revocation starts a new generation, and positions resolved for an
//!   older one are dropped, as are records that arrived in an older one.
//! - With several records of a partition received and not yet processed
//!   (the runner processes partitions concurrently, each in order), two
//!   cursors move apart: the next offset to *receive* classifies arrivals,
//!   the next offset to *process* is what is committed.

use std::collections::BTreeMap;

/// A topic partition.
pub type PartitionKey = (String, i32);

/// Where an assigned partition resumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// At this offset: the next one to process.
    At(i64),
    /// At the first record the log still holds (nothing stored anywhere).
    Beginning,
}

/// How an arriving record relates to its partition's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// The next record (or the first one after positioning at the beginning).
    InOrder,
    /// The partition is not owned (any more): fetched before a revocation.
    NotOwned,
    /// Already processed by this owner: a re-delivery.
    Behind { expected: i64 },
    /// Records were skipped between the position and this one. Never
    /// expected on our topics (no compaction, no transactions): reported.
    Gap { expected: i64 },
}

#[derive(Debug, Default, Clone, Copy)]
struct Owned {
    /// Next offset to process, once known: what is committed.
    next: Option<i64>,
    /// Next offset expected to arrive, once a record arrived (until then,
    /// `next`).
    received: Option<i64>,
    /// Producer timestamp of the newest processed record.
    last_timestamp: Option<i64>,
}

/// The partitions of one stage instance (eager rebalance protocol: every
/// assignment and revocation is the whole set).
#[derive(Debug, Default)]
pub struct PartitionBook {
    generation: u64,
    pending: Option<Vec<PartitionKey>>,
    owned: BTreeMap<PartitionKey, Owned>,
}

impl PartitionBook {
    /// The group assigned `partitions`; they wait for positions.
    pub fn assign(&mut self, partitions: Vec<PartitionKey>) -> u64 {
        self.generation += 1;
        self.owned.clear();
        self.pending = Some(partitions);
        self.generation
    }

    /// Every partition was taken away (or the assignment was lost); returns
    /// those that were owned.
    pub fn revoke_all(&mut self) -> Vec<PartitionKey> {
        self.generation += 1;
        self.pending = None;
        std::mem::take(&mut self.owned).into_keys().collect()
    }

    /// Assignments and revocations so far (the tests wait on it).
    #[cfg(test)]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn has_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// The assignment waiting for positions, with its generation.
    pub fn take_pending(&mut self) -> Option<(u64, Vec<PartitionKey>)> {
        self.pending.take().map(|p| (self.generation, p))
    }

    /// Positions resolved for the assignment of `generation`. Returns false
    /// (and changes nothing) when a later rebalance made them stale: they
    /// must not be applied.
    pub fn positioned(&mut self, generation: u64, positions: &[(PartitionKey, Position)]) -> bool {
        if generation != self.generation || self.pending.is_some() {
            return false;
        }
        for (key, position) in positions {
            let next = match position {
                Position::At(n) => Some(*n),
                Position::Beginning => None,
            };
            self.owned.insert(key.clone(), Owned { next, received: None, last_timestamp: None });
        }
        true
    }

    /// Classifies a record that arrived for `key` and, when it is to be
    /// processed (in order, or after a gap), moves the receive cursor past
    /// it. Also returns the generation the record arrived in, which its
    /// [`PartitionBook::processed`] must name.
    pub fn arrive(&mut self, key: &PartitionKey, offset: i64) -> (Arrival, u64) {
        let Some(owned) = self.owned.get_mut(key) else { return (Arrival::NotOwned, self.generation) };
        let arrival = match owned.received.or(owned.next) {
            Some(expected) if offset < expected => Arrival::Behind { expected },
            Some(expected) if offset > expected => Arrival::Gap { expected },
            _ => Arrival::InOrder,
        };
        if !matches!(arrival, Arrival::Behind { .. }) {
            owned.received = Some(offset + 1);
        }
        (arrival, self.generation)
    }

    /// Whether records that arrived in `generation` may still be processed
    /// here (no rebalance since).
    pub fn is_current(&self, generation: u64) -> bool {
        generation == self.generation && self.pending.is_none()
    }

    /// The record at `offset`, which arrived in `generation`, took effect.
    /// Returns the offset to store for commit (the next one to process), or
    /// `None` when the partition is no longer owned or was assigned anew
    /// since (its owner then decides from the committed position).
    pub fn processed(&mut self, generation: u64, key: &PartitionKey, offset: i64, timestamp_ms: Option<i64>) -> Option<i64> {
        if generation != self.generation {
            return None;
        }
        let owned = self.owned.get_mut(key)?;
        let next = offset + 1;
        // Never backwards: a re-delivered record does not rewind the position.
        owned.next = Some(owned.next.map_or(next, |n| n.max(next)));
        if timestamp_ms.is_some() {
            owned.last_timestamp = timestamp_ms;
        }
        owned.next
    }

    pub fn next_offset(&self, key: &PartitionKey) -> Option<i64> {
        self.owned.get(key).and_then(|o| o.next)
    }

    pub fn last_timestamp(&self, key: &PartitionKey) -> Option<i64> {
        self.owned.get(key).and_then(|o| o.last_timestamp)
    }

    pub fn owned(&self) -> Vec<PartitionKey> {
        self.owned.keys().cloned().collect()
    }
}

/// Where a partition whose offsets Kafka owns resumes: the group's committed
/// offset, but never past the log end (a commit past it would skip the next
/// record produced there; deployments hit by the store-offset bug have such
/// commits) and never before the log start.
pub fn resume_from_committed(committed: Option<i64>, low: i64, high: i64) -> Position {
    match committed {
        None => Position::Beginning,
        Some(c) if c <= low => Position::Beginning,
        Some(c) => Position::At(c.min(high)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(p: i32) -> PartitionKey {
        ("documents.uploaded".to_string(), p)
    }

    #[test]
    fn an_assigned_partition_is_not_owned_until_positioned() {
        let mut book = PartitionBook::default();
        book.assign(vec![key(0), key(1)]);
        assert!(book.has_pending());
        assert_eq!(book.arrive(&key(0), 0).0, Arrival::NotOwned);
        let (generation, pending) = book.take_pending().unwrap();
        assert_eq!(pending, vec![key(0), key(1)]);
        assert!(book.positioned(generation, &[(key(0), Position::At(7)), (key(1), Position::Beginning)]));
        assert_eq!(book.arrive(&key(0), 7).0, Arrival::InOrder);
        assert_eq!(book.arrive(&key(1), 3).0, Arrival::InOrder);
        assert_eq!(book.owned(), vec![key(0), key(1)]);
    }

    #[test]
    fn the_stored_offset_is_the_next_one_to_process() {
        let mut book = PartitionBook::default();
        let g = book.assign(vec![key(0)]);
        book.take_pending();
        book.positioned(g, &[(key(0), Position::At(4))]);
        assert_eq!(book.arrive(&key(0), 4), (Arrival::InOrder, g));
        assert_eq!(book.processed(g, &key(0), 4, Some(1000)), Some(5));
        assert_eq!(book.next_offset(&key(0)), Some(5));
        assert_eq!(book.last_timestamp(&key(0)), Some(1000));
        assert_eq!(book.arrive(&key(0), 5).0, Arrival::InOrder);
    }

    #[test]
    fn a_redelivered_record_never_rewinds_the_position() {
        let mut book = PartitionBook::default();
        let g = book.assign(vec![key(0)]);
        book.take_pending();
        book.positioned(g, &[(key(0), Position::At(10))]);
        assert_eq!(book.arrive(&key(0), 8).0, Arrival::Behind { expected: 10 });
        assert_eq!(book.processed(g, &key(0), 8, None), Some(10));
    }

    #[test]
    fn a_skipped_record_is_reported_as_a_gap() {
        let mut book = PartitionBook::default();
        let g = book.assign(vec![key(0)]);
        book.take_pending();
        book.positioned(g, &[(key(0), Position::At(10))]);
        assert_eq!(book.arrive(&key(0), 11).0, Arrival::Gap { expected: 10 });
        // Processing resumes after the gap.
        assert_eq!(book.arrive(&key(0), 12).0, Arrival::InOrder);
    }

    #[test]
    fn nothing_is_stored_for_a_revoked_partition() {
        let mut book = PartitionBook::default();
        let g = book.assign(vec![key(0), key(1)]);
        book.take_pending();
        book.positioned(g, &[(key(0), Position::At(0)), (key(1), Position::At(0))]);
        // Revocation mid-batch: the record in flight finishes afterwards.
        assert_eq!(book.revoke_all(), vec![key(0), key(1)]);
        assert_eq!(book.processed(g, &key(0), 0, None), None);
        assert_eq!(book.arrive(&key(1), 0).0, Arrival::NotOwned);
    }

    #[test]
    fn positions_resolved_before_a_later_rebalance_are_dropped() {
        let mut book = PartitionBook::default();
        let g1 = book.assign(vec![key(0), key(1)]);
        book.take_pending();
        // While positions load, the group rebalances: revoke, then a new assignment.
        book.revoke_all();
        let g2 = book.assign(vec![key(1)]);
        assert!(!book.positioned(g1, &[(key(0), Position::At(3)), (key(1), Position::At(3))]));
        assert_eq!(book.arrive(&key(0), 3).0, Arrival::NotOwned);
        // The pending assignment of g2 is positioned in its own turn.
        let (g, pending) = book.take_pending().unwrap();
        assert_eq!((g, pending), (g2, vec![key(1)]));
        assert!(book.positioned(g2, &[(key(1), Position::At(9))]));
        assert_eq!(book.arrive(&key(1), 9).0, Arrival::InOrder);
    }

    #[test]
    fn positions_for_a_superseded_assignment_are_dropped_even_without_a_revocation() {
        let mut book = PartitionBook::default();
        let g1 = book.assign(vec![key(0)]);
        book.take_pending();
        book.assign(vec![key(0), key(1)]);
        assert!(!book.positioned(g1, &[(key(0), Position::At(1))]));
        assert!(book.has_pending());
    }

    #[test]
    fn records_received_ahead_of_processing_are_in_order_and_commit_follows_processing() {
        let mut book = PartitionBook::default();
        let g = book.assign(vec![key(0)]);
        book.take_pending();
        book.positioned(g, &[(key(0), Position::At(3))]);
        // Three records arrive before the first is processed.
        for offset in 3..6 {
            assert_eq!(book.arrive(&key(0), offset), (Arrival::InOrder, g));
        }
        assert_eq!(book.next_offset(&key(0)), Some(3), "nothing processed: nothing to commit");
        assert_eq!(book.arrive(&key(0), 4).0, Arrival::Behind { expected: 6 }, "a re-delivery of a received record");
        assert_eq!(book.processed(g, &key(0), 3, None), Some(4));
        assert_eq!(book.processed(g, &key(0), 4, None), Some(5));
    }

    #[test]
    fn a_record_of_an_earlier_generation_is_never_stored_even_on_the_same_partition() {
        let mut book = PartitionBook::default();
        let g1 = book.assign(vec![key(0)]);
        book.take_pending();
        book.positioned(g1, &[(key(0), Position::At(0))]);
        book.arrive(&key(0), 0);
        book.arrive(&key(0), 1);
        // Revoked and assigned back while records 0 and 1 were in the runner.
        book.revoke_all();
        let g2 = book.assign(vec![key(0)]);
        assert!(!book.is_current(g1));
        book.take_pending();
        book.positioned(g2, &[(key(0), Position::At(0))]);
        assert!(book.is_current(g2) && !book.is_current(g1));
        assert_eq!(book.processed(g1, &key(0), 1, None), None, "the old record 1 must not commit past 0");
        assert_eq!(book.next_offset(&key(0)), Some(0));
        assert_eq!(book.arrive(&key(0), 0), (Arrival::InOrder, g2));
    }

    #[test]
    fn a_committed_offset_past_the_log_end_resumes_at_the_log_end() {
        assert_eq!(resume_from_committed(Some(13), 0, 12), Position::At(12));
        assert_eq!(resume_from_committed(Some(12), 0, 12), Position::At(12));
        assert_eq!(resume_from_committed(Some(5), 0, 12), Position::At(5));
        assert_eq!(resume_from_committed(None, 0, 12), Position::Beginning);
        assert_eq!(resume_from_committed(Some(2), 4, 12), Position::Beginning);
        assert_eq!(resume_from_committed(Some(0), 0, 0), Position::Beginning);
    }
}
