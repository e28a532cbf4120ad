//! What a sync must do, from a listing and the checkpoint: pure, so every
//! case (new, changed, unchanged, pending, failed, removed, back again) is
//! a unit test. Ids are derived here too, so the same file announced twice
//! (a sync killed and run again) carries the same event id.

use std::collections::{HashMap, HashSet};

use rag_store::sources::SourceFileRow;
use uuid::Uuid;

/// A file as a listing gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The path under the folder, or the object key (`/`-separated).
    pub key: String,
    pub size: u64,
    /// What changes when the content may have: an object's ETag, a file's
    /// size and modification time.
    pub version: String,
}

/// One thing a sync does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step<'a> {
    /// A key never seen, or seen and removed since (`generation` then names
    /// the new document): fetch, hash, announce revision 1.
    Add { listed: &'a Listed, generation: i32 },
    /// The listing says the file may have changed, or an announcement was
    /// begun and not confirmed: fetch and hash; a new content is the next
    /// revision of the same document.
    Check { listed: &'a Listed, seen: &'a SourceFileRow },
    /// Gone from the listing: its document is deleted.
    Remove { seen: &'a SourceFileRow },
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan<'a> {
    pub steps: Vec<Step<'a>>,
    /// Listed as the checkpoint has them: not fetched.
    pub unchanged: usize,
}

pub const PRESENT: &str = "present";
pub const REMOVED: &str = "removed";
pub const FAILED: &str = "failed";

/// Compares a listing with what the source has seen.
pub fn plan<'a>(listed: &'a [Listed], seen: &'a [SourceFileRow]) -> Plan<'a> {
    let by_key: HashMap<&str, &SourceFileRow> = seen.iter().map(|s| (s.key.as_str(), s)).collect();
    let mut out = Plan::default();
    let mut listed_keys = HashSet::with_capacity(listed.len());
    for l in listed {
        listed_keys.insert(l.key.as_str());
        match by_key.get(l.key.as_str()) {
            None => out.steps.push(Step::Add { listed: l, generation: 0 }),
            Some(s) if s.state == REMOVED => out.steps.push(Step::Add { listed: l, generation: s.generation }),
            Some(s) if s.pending_sha256.is_some() => out.steps.push(Step::Check { listed: l, seen: s }),
            // The same listing as last time: a file that failed stays failed
            // (with its reason) until it changes.
            Some(s) if s.listed_version.as_deref() == Some(l.version.as_str()) => out.unchanged += 1,
            Some(s) => out.steps.push(Step::Check { listed: l, seen: s }),
        }
    }
    for s in seen {
        if s.state != REMOVED && !listed_keys.contains(s.key.as_str()) {
            out.steps.push(Step::Remove { seen: s });
        }
    }
    out
}

fn derived(seed: &str) -> Uuid {
    Uuid::new_v5(&Uuid::NAMESPACE_URL, format!("rag-engine:source:{seed}").as_bytes())
}

/// The document a source's file is, in its `generation` (bumped each
/// time the file is removed: one added again is a new document).
pub fn document_id(source: Uuid, key: &str, generation: i32) -> Uuid {
    derived(&format!("{source}/{generation}/{key}"))
}

/// The DocumentUploaded announcing `revision` of a document with content
/// `sha256`: the same each time it is announced.
pub fn upload_event_id(document: Uuid, revision: i32, sha256: &str) -> Uuid {
    derived(&format!("{document}/r{revision}/{sha256}"))
}

/// The DocumentDeleted of a source's document.
pub fn deleted_event_id(document: Uuid) -> Uuid {
    derived(&format!("{document}/deleted"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(key: &str, version: &str) -> Listed {
        Listed { key: key.into(), size: 10, version: version.into() }
    }

    fn seen(key: &str, version: &str, state: &str) -> SourceFileRow {
        SourceFileRow {
            key: key.into(),
            generation: 0,
            document_id: document_id(Uuid::nil(), key, 0),
            listed_version: Some(version.into()),
            size_bytes: Some(10),
            sha256: Some("aa".into()),
            revision: 1,
            pending_sha256: None,
            pending_revision: None,
            state: state.into(),
            failure: None,
            failure_code: None,
        }
    }

    #[test]
    fn new_changed_unchanged_and_removed_files() {
        let l = vec![listed("a.md", "v1"), listed("b.md", "v2"), listed("new.md", "v1")];
        let s = vec![seen("a.md", "v1", PRESENT), seen("b.md", "v1", PRESENT), seen("gone.md", "v1", PRESENT)];
        let p = plan(&l, &s);
        assert_eq!(p.unchanged, 1);
        assert_eq!(
            p.steps,
            vec![Step::Check { listed: &l[1], seen: &s[1] }, Step::Add { listed: &l[2], generation: 0 }, Step::Remove { seen: &s[2] },]
        );
    }

    #[test]
    fn a_pending_announcement_is_finished_even_when_the_listing_is_the_same() {
        let l = vec![listed("a.md", "v1")];
        let mut s = seen("a.md", "v1", PRESENT);
        s.pending_sha256 = Some("bb".into());
        s.pending_revision = Some(2);
        let s = vec![s];
        assert_eq!(plan(&l, &s).steps, vec![Step::Check { listed: &l[0], seen: &s[0] }]);
    }

    #[test]
    fn a_failed_file_waits_for_a_change_and_a_removed_one_comes_back_as_a_new_document() {
        let l = vec![listed("big.pdf", "v1"), listed("back.md", "v3")];
        let mut back = seen("back.md", "v1", REMOVED);
        back.generation = 1;
        let s = vec![seen("big.pdf", "v1", FAILED), back];
        let p = plan(&l, &s);
        assert_eq!(p.unchanged, 1);
        assert_eq!(p.steps, vec![Step::Add { listed: &l[1], generation: 1 }]);
        assert_ne!(document_id(Uuid::nil(), "back.md", 0), document_id(Uuid::nil(), "back.md", 1));
        // A removed file stays removed: nothing to do when it is not listed.
        assert!(plan(&[], &s[1..]).steps.is_empty());
    }

    #[test]
    fn ids_are_the_same_each_time_and_differ_by_content_and_revision() {
        let d = document_id(Uuid::nil(), "a.md", 0);
        assert_eq!(d, document_id(Uuid::nil(), "a.md", 0));
        assert_eq!(upload_event_id(d, 2, "aa"), upload_event_id(d, 2, "aa"));
        assert_ne!(upload_event_id(d, 2, "aa"), upload_event_id(d, 2, "bb"));
        assert_ne!(upload_event_id(d, 2, "aa"), upload_event_id(d, 3, "aa"));
        assert_ne!(deleted_event_id(d), upload_event_id(d, 1, "aa"));
    }
}
