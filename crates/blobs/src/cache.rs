//! Objects this process wrote, kept for this process's own reads.
//!
//! Why: with every stage in one process (`run all`), each document's
//! segments are written by the parser and read back by the chunker and the
//! projector, its chunks written by the chunker and read by the indexer and
//! the projector: 4 of the 9 object-storage calls per document were reads
//! of bytes this process had just sent, each a signed HTTP request and a
//! file read on the server. Derived objects are content-addressed (their
//! key carries their SHA-256), so a copy can never be stale while the
//! object exists; deleting through this store drops the copy. A deletion
//! by another process is not seen here: a copy is kept for at most
//! [`MAX_AGE`], and the stages check a document's deletion in Postgres
//! before they act on it, as they did for a read that raced the deletion.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use lru::LruCache;

/// How long a copy is served.
pub const MAX_AGE: Duration = Duration::from_secs(120);

/// Objects larger than this are not kept (an original, a long text): the
/// budget is for the many small derived objects.
const MAX_OBJECT_BYTES: usize = 4 * 1024 * 1024;

struct Entry {
    bytes: Box<[u8]>,
    stored: Instant,
}

struct Inner {
    entries: LruCache<String, Entry>,
    bytes: usize,
}

impl Inner {
    fn remove(&mut self, key: &str) {
        if let Some(e) = self.entries.pop(key) {
            self.bytes -= e.bytes.len();
        }
    }
}

/// Least recently used first out, within a byte budget. Shared by the
/// clones of a [`crate::BlobStore`].
pub(crate) struct BlobCache {
    inner: Mutex<Inner>,
    budget: usize,
}

impl BlobCache {
    /// `budget` bytes; 0 keeps nothing.
    pub(crate) fn new(budget: usize) -> Self {
        BlobCache { inner: Mutex::new(Inner { entries: LruCache::unbounded(), bytes: 0 }), budget }
    }

    pub(crate) fn put(&self, key: &str, bytes: &[u8]) {
        if self.budget == 0 || bytes.len() > MAX_OBJECT_BYTES.min(self.budget) {
            return;
        }
        let Ok(mut inner) = self.inner.lock() else { return };
        inner.remove(key);
        inner.entries.put(key.to_string(), Entry { bytes: bytes.into(), stored: Instant::now() });
        inner.bytes += bytes.len();
        while inner.bytes > self.budget {
            match inner.entries.pop_lru() {
                Some((_, e)) => inner.bytes -= e.bytes.len(),
                None => break,
            }
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<Vec<u8>> {
        let mut inner = self.inner.lock().ok()?;
        let entry = inner.entries.get(key)?;
        if entry.stored.elapsed() <= MAX_AGE {
            return Some(entry.bytes.to_vec());
        }
        inner.remove(key);
        None
    }

    pub(crate) fn remove(&self, key: &str) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.remove(key);
        }
    }

    pub(crate) fn remove_prefix(&self, prefix: &str) {
        if let Ok(mut inner) = self.inner.lock() {
            let keys: Vec<String> = inner.entries.iter().filter(|(k, _)| k.starts_with(prefix)).map(|(k, _)| k.clone()).collect();
            for k in keys {
                inner.remove(&k);
            }
        }
    }

    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.inner.lock().map(|i| i.bytes).unwrap_or(0)
    }
}

impl std::fmt::Debug for BlobCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobCache").field("budget", &self.budget).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_within_the_budget_least_recently_used_out() {
        let cache = BlobCache::new(10);
        cache.put("a", b"1234");
        cache.put("b", b"5678");
        assert_eq!(cache.get("a").as_deref(), Some(&b"1234"[..]));
        // "b" is now the least recently used: it goes for "c".
        cache.put("c", b"90ab");
        assert_eq!(cache.get("b"), None);
        assert_eq!(cache.get("a").as_deref(), Some(&b"1234"[..]));
        assert_eq!(cache.get("c").as_deref(), Some(&b"90ab"[..]));
        assert_eq!(cache.bytes(), 8);
        // Larger than the budget: not kept, nothing evicted for it.
        cache.put("big", &[0u8; 11]);
        assert_eq!(cache.get("big"), None);
        assert_eq!(cache.bytes(), 8);
        // The same key again replaces it, counted once.
        cache.put("a", b"12");
        assert_eq!(cache.bytes(), 6);
    }

    #[test]
    fn deletions_drop_copies_and_a_zero_budget_keeps_nothing() {
        let cache = BlobCache::new(1024);
        cache.put("w/ws/d/doc1/segments/x.json", b"s");
        cache.put("w/ws/d/doc1/chunks/y.json", b"c");
        cache.put("w/ws/d/doc2/segments/z.json", b"t");
        cache.remove_prefix("w/ws/d/doc1/");
        assert_eq!(cache.get("w/ws/d/doc1/segments/x.json"), None);
        assert_eq!(cache.get("w/ws/d/doc1/chunks/y.json"), None);
        cache.remove("w/ws/d/doc2/segments/z.json");
        assert_eq!(cache.get("w/ws/d/doc2/segments/z.json"), None);
        assert_eq!(cache.bytes(), 0);
        let off = BlobCache::new(0);
        off.put("k", b"v");
        assert_eq!(off.get("k"), None);
    }
}
