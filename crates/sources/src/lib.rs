//! Sources a workspace follows: a folder on the server or an S3 prefix.
//! A sync lists the source, compares the listing with what the source has
//! seen (its checkpoint, `rag_store::sources`), and announces what changed
//! through the same upload path as the API and the CLI: a new file is a new
//! document, a changed file a new revision of its document (same id), a
//! removed file a `DocumentDeleted`.
//!
//! The comparison is pure ([`plan`]); listing ([`list`]) and the sync
//! itself ([`sync`]) are the I/O edges.

pub mod list;
pub mod plan;
pub mod sync;

use std::path::{Component, Path, PathBuf};

pub use sync::{SyncLimits, SyncPlaces, Syncer};

/// Where a source's files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An absolute, canonical folder path under an allowed root.
    Folder(PathBuf),
    /// A bucket and a key prefix (empty: the whole bucket).
    S3 { bucket: String, prefix: String },
}

impl Location {
    pub fn kind(&self) -> &'static str {
        match self {
            Location::Folder(_) => "folder",
            Location::S3 { .. } => "s3",
        }
    }

    /// How the checkpoint stores it: the folder's path, or `s3://bucket/prefix`.
    pub fn stored(&self) -> String {
        match self {
            Location::Folder(p) => p.display().to_string(),
            Location::S3 { bucket, prefix } => format!("s3://{bucket}/{prefix}"),
        }
    }

    /// A stored location read back.
    pub fn from_stored(kind: &str, location: &str) -> Result<Location, SourceError> {
        match kind {
            "folder" => Ok(Location::Folder(PathBuf::from(location))),
            "s3" => parse_s3(location),
            other => Err(SourceError::Invalid(format!("unknown source kind {other:?}"))),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotAllowed(String),
    #[error(transparent)]
    Store(#[from] rag_store::StoreError),
    #[error(transparent)]
    Blob(#[from] rag_blobs::BlobError),
    #[error(transparent)]
    Upload(#[from] rag_upload::UploadError),
    #[error(transparent)]
    Bus(#[from] rag_bus::BusError),
    #[error("listing {path}: {message}")]
    List { path: String, message: String },
}

/// `s3://bucket/prefix` as a location.
pub fn parse_s3(url: &str) -> Result<Location, SourceError> {
    let rest = url.strip_prefix("s3://").ok_or_else(|| SourceError::Invalid(format!("{url:?} is not s3://bucket/prefix")))?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let valid =
        (3..=63).contains(&bucket.len()) && bucket.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
    if !valid {
        return Err(SourceError::Invalid(format!("{bucket:?} is not an S3 bucket name (3 to 63 lowercase letters, digits, '-' and '.')")));
    }
    if prefix.chars().any(char::is_control) {
        return Err(SourceError::Invalid("the prefix holds control characters".into()));
    }
    Ok(Location::S3 { bucket: bucket.to_string(), prefix: prefix.to_string() })
}

/// Who adds (or syncs) a source. The server's settings name the folders
/// and buckets sources may follow; an entry holding `{workspace}` is a
/// workspace's own place (its id put in), the only kind a workspace's user
/// may follow through the API; an entry without it is for the operator
/// (the CLI), so no user reaches a folder or bucket meant for another
/// tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adder<'a> {
    /// `rag-engine sources add`, and every sync: any place the settings name.
    Operator,
    /// A user of this workspace (the HTTP API, the page).
    Workspace(&'a str),
}

/// The placeholder of a workspace's own place in `SOURCE_FOLDER_ROOTS` and
/// `SOURCE_S3_BUCKETS`.
pub const WORKSPACE_PLACEHOLDER: &str = "{workspace}";

/// The entries of a setting `adder` may use, for `workspace`, with the
/// placeholder filled in.
fn places_for(entries: &[String], adder: Adder<'_>, workspace: &str) -> Vec<String> {
    entries
        .iter()
        .filter_map(|e| match (e.contains(WORKSPACE_PLACEHOLDER), adder) {
            (true, _) => Some(e.replace(WORKSPACE_PLACEHOLDER, workspace)),
            (false, Adder::Operator) => Some(e.clone()),
            (false, Adder::Workspace(_)) => None,
        })
        .collect()
}

fn not_allowed(adder: Adder<'_>, what: &str, operator_detail: String) -> SourceError {
    match adder {
        Adder::Operator => SourceError::NotAllowed(operator_detail),
        // A user is told no more than that: not the server's paths.
        Adder::Workspace(_) => SourceError::NotAllowed(format!("the server does not let this workspace follow {what}")),
    }
}

/// An S3 location a source may follow: a bucket (and, for a workspace's
/// user, a prefix) `SOURCE_S3_BUCKETS` allows, and never the project's own
/// bucket, which holds every workspace's originals.
pub fn allowed_bucket(url: &str, own_bucket: &str, allowed: &[String], adder: Adder<'_>, workspace: &str) -> Result<Location, SourceError> {
    let location = parse_s3(url)?;
    let Location::S3 { bucket, prefix } = &location else { return Ok(location) };
    if bucket == own_bucket {
        return Err(SourceError::NotAllowed(format!(
            "{bucket} is rag-engine's own bucket (S3_BUCKET), which holds every workspace's originals: it cannot be followed"
        )));
    }
    let places = places_for(allowed, adder, workspace);
    let fits = places.iter().any(|place| {
        let (b, p) = place.split_once('/').unwrap_or((place.as_str(), ""));
        b == bucket && (adder == Adder::Operator || prefix.starts_with(p))
    });
    if !fits {
        return Err(not_allowed(
            adder,
            "that bucket or prefix",
            format!(
                "the server does not allow following {url} (SOURCE_S3_BUCKETS: {})",
                if allowed.is_empty() { "none".into() } else { allowed.join(", ") }
            ),
        ));
    }
    Ok(location)
}

/// A folder a source may follow, as a canonical location: written under
/// one of the roots `SOURCE_FOLDER_ROOTS` gives `adder` (checked on the
/// path as written, before anything on disk is looked at, so nobody learns
/// what exists elsewhere), without `..`, and its real path, symlinks
/// resolved, still under that root's real path.
pub fn allowed_folder(path: &Path, roots: &[String], adder: Adder<'_>, workspace: &str) -> Result<Location, SourceError> {
    let roots: Vec<PathBuf> = places_for(roots, adder, workspace).into_iter().map(PathBuf::from).collect();
    if roots.is_empty() {
        return Err(not_allowed(
            adder,
            "a folder",
            "no folder may be followed: the server allows none (set SOURCE_FOLDER_ROOTS to the folders sources may live under)".into(),
        ));
    }
    if !path.is_absolute() || path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(SourceError::Invalid(format!("{} must be an absolute path without '..'", path.display())));
    }
    let listed = |roots: &[PathBuf]| roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ");
    let Some(root) = roots.iter().find(|r| path.starts_with(r)) else {
        return Err(not_allowed(
            adder,
            "that folder",
            format!("{} is not under a folder the server allows (SOURCE_FOLDER_ROOTS: {})", path.display(), listed(&roots)),
        ));
    };
    let real = path.canonicalize().map_err(|e| SourceError::Invalid(format!("{}: {e}", path.display())))?;
    let real_root = root.canonicalize().map_err(|e| SourceError::Invalid(format!("{}: {e}", root.display())))?;
    if !real.starts_with(&real_root) {
        return Err(not_allowed(adder, "that folder", format!("{} leads outside {} (a symlink)", path.display(), root.display())));
    }
    if !real.is_dir() {
        return Err(SourceError::Invalid(format!("{} is not a folder", path.display())));
    }
    Ok(Location::Folder(real))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_locations_are_parsed_and_bad_buckets_refused() {
        assert_eq!(parse_s3("s3://team-docs/hr/").unwrap(), Location::S3 { bucket: "team-docs".into(), prefix: "hr/".into() });
        assert_eq!(parse_s3("s3://team-docs").unwrap(), Location::S3 { bucket: "team-docs".into(), prefix: String::new() });
        assert!(parse_s3("s3://Team_Docs/x").is_err());
        assert!(parse_s3("http://x/y").is_err());
        let l = parse_s3("s3://team-docs/hr/").unwrap();
        assert_eq!(Location::from_stored(l.kind(), &l.stored()).unwrap(), l);
    }

    #[test]
    fn only_allowed_buckets_and_never_the_projects_own() {
        let allowed = vec!["team-docs".to_string(), "rag-engine".to_string(), "shared/ws/{workspace}/".to_string()];
        let op = Adder::Operator;
        assert!(allowed_bucket("s3://team-docs/hr/", "rag-engine", &allowed, op, "w1").is_ok());
        assert!(matches!(
            allowed_bucket("s3://rag-engine/workspaces/other/", "rag-engine", &allowed, op, "w1"),
            Err(SourceError::NotAllowed(_))
        ));
        assert!(matches!(allowed_bucket("s3://elsewhere/x", "rag-engine", &allowed, op, "w1"), Err(SourceError::NotAllowed(_))));
        assert!(matches!(allowed_bucket("s3://team-docs/x", "rag-engine", &[], op, "w1"), Err(SourceError::NotAllowed(_))));
        // A workspace's user: only its own prefix of a scoped entry.
        let user = Adder::Workspace("w1");
        assert!(allowed_bucket("s3://shared/ws/w1/hr/", "rag-engine", &allowed, user, "w1").is_ok());
        assert!(matches!(allowed_bucket("s3://shared/ws/w2/hr/", "rag-engine", &allowed, user, "w1"), Err(SourceError::NotAllowed(_))));
        assert!(matches!(allowed_bucket("s3://team-docs/hr/", "rag-engine", &allowed, user, "w1"), Err(SourceError::NotAllowed(_))));
    }

    #[test]
    fn folders_must_be_under_an_allowed_root_without_escaping_it() {
        let root = tempfile::tempdir().unwrap();
        let inside = root.path().join("team");
        std::fs::create_dir(&inside).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let roots = vec![root.path().display().to_string()];
        let op = Adder::Operator;
        assert!(matches!(allowed_folder(&inside, &roots, op, "w1"), Ok(Location::Folder(_))));
        assert!(matches!(allowed_folder(outside.path(), &roots, op, "w1"), Err(SourceError::NotAllowed(_))));
        assert!(matches!(allowed_folder(&inside.join("..").join(".."), &roots, op, "w1"), Err(SourceError::Invalid(_))));
        assert!(matches!(allowed_folder(std::path::Path::new("relative"), &roots, op, "w1"), Err(SourceError::Invalid(_))));
        assert!(matches!(allowed_folder(&inside, &[], op, "w1"), Err(SourceError::NotAllowed(_))));
        // A symlink inside the root that points outside it is judged by where it points.
        let link = root.path().join("escape");
        std::os::unix::fs::symlink(outside.path(), &link).unwrap();
        assert!(matches!(allowed_folder(&link, &roots, op, "w1"), Err(SourceError::NotAllowed(_))));
        // Outside every root, nothing on disk is looked at: a missing path is "not allowed", not "no such file".
        assert!(matches!(allowed_folder(std::path::Path::new("/no/such/place"), &roots, op, "w1"), Err(SourceError::NotAllowed(_))));
    }

    #[test]
    fn a_workspaces_user_follows_only_its_own_folder_and_is_told_no_paths() {
        let base = tempfile::tempdir().unwrap();
        for ws in ["w1", "w2"] {
            std::fs::create_dir_all(base.path().join(ws).join("hr")).unwrap();
        }
        std::fs::create_dir_all(base.path().join("operator-only")).unwrap();
        let roots = vec![format!("{}/{{workspace}}", base.path().display()), base.path().join("operator-only").display().to_string()];
        let user = Adder::Workspace("w1");
        assert!(allowed_folder(&base.path().join("w1/hr"), &roots, user, "w1").is_ok());
        for other in ["w2/hr", "operator-only"] {
            match allowed_folder(&base.path().join(other), &roots, user, "w1") {
                Err(SourceError::NotAllowed(m)) => assert!(!m.contains(&base.path().display().to_string()), "{m}"),
                r => panic!("{other}: {r:?}"),
            }
        }
        assert!(allowed_folder(&base.path().join("operator-only"), &roots, Adder::Operator, "w1").is_ok());
    }
}
