//! A document's revisions in the read models. A document keeps its id when
//! its bytes change; each revision is parsed, chunked and indexed beside
//! the one before, and search switches to it when it is ingested. The
//! chunks of one revision and chunking version are stored under one key,
//! its *index version*: the chunking version alone for the first revision
//! (the keys and chunk ids stored before revisions existed stay valid),
//! `…:rN` from the second on.

/// The first revision of every document, and of every event written
/// before revisions existed.
pub const FIRST_REVISION: i32 = 1;

const SEPARATOR: &str = ":r";

/// The key a revision's chunks of one chunking version are stored under.
pub fn index_version(chunking_version: &str, revision: i32) -> String {
    if revision <= FIRST_REVISION {
        chunking_version.to_string()
    } else {
        format!("{chunking_version}{SEPARATOR}{revision}")
    }
}

/// The chunking version and revision an index version names.
pub fn split_index_version(key: &str) -> (&str, i32) {
    match key.rsplit_once(SEPARATOR) {
        Some((version, n)) => match n.parse::<i32>() {
            Ok(revision) if revision > FIRST_REVISION => (version, revision),
            _ => (key, FIRST_REVISION),
        },
        None => (key, FIRST_REVISION),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_revision_keeps_the_keys_stored_before_revisions() {
        assert_eq!(index_version("paragraphs@3", 1), "paragraphs@3");
        assert_eq!(split_index_version("paragraphs@3"), ("paragraphs@3", 1));
    }

    #[test]
    fn later_revisions_round_trip() {
        let key = index_version("paragraphs@3", 12);
        assert_eq!(key, "paragraphs@3:r12");
        assert_eq!(split_index_version(&key), ("paragraphs@3", 12));
        // A chunking version that happens to hold the separator is not a revision.
        assert_eq!(split_index_version("odd:rx"), ("odd:rx", 1));
    }
}
