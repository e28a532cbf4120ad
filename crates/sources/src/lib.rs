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

pub use sync::{SyncLimits, Syncer};

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

/// An S3 location a source may follow: its bucket is one the server
/// allows (`SOURCE_S3_BUCKETS`), and never the project's own bucket, which
/// holds every workspace's originals (a source over it would copy one
/// tenant's files into another's workspace).
pub fn allowed_bucket(url: &str, own_bucket: &str, allowed: &[String]) -> Result<Location, SourceError> {
    let location = parse_s3(url)?;
    let Location::S3 { bucket, .. } = &location else { return Ok(location) };
    if bucket == own_bucket {
        return Err(SourceError::NotAllowed(format!(
            "{bucket} is rag-engine's own bucket (S3_BUCKET), which holds every workspace's originals: it cannot be followed"
        )));
    }
    if !allowed.iter().any(|b| b == bucket) {
        return Err(SourceError::NotAllowed(format!(
            "the server does not allow following bucket {bucket} (SOURCE_S3_BUCKETS: {})",
            if allowed.is_empty() { "none".to_string() } else { allowed.join(", ") }
        )));
    }
    Ok(location)
}

/// A folder the operator allows, as a canonical location: it must exist,
/// and its real path (symlinks resolved) must lie under one of `roots`
/// (`SOURCE_FOLDER_ROOTS`). A path with `..` is refused before it is
/// resolved, so no spelling reaches outside a root.
pub fn allowed_folder(path: &Path, roots: &[PathBuf]) -> Result<Location, SourceError> {
    if roots.is_empty() {
        return Err(SourceError::NotAllowed(
            "no folder may be followed: the server allows none (set SOURCE_FOLDER_ROOTS to the folders sources may live under)".into(),
        ));
    }
    if !path.is_absolute() || path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(SourceError::Invalid(format!("{} must be an absolute path without '..'", path.display())));
    }
    let real = path.canonicalize().map_err(|e| SourceError::Invalid(format!("{}: {e}", path.display())))?;
    if !real.is_dir() {
        return Err(SourceError::Invalid(format!("{} is not a folder", path.display())));
    }
    let under = roots.iter().filter_map(|r| r.canonicalize().ok()).any(|root| real.starts_with(&root));
    if !under {
        return Err(SourceError::NotAllowed(format!(
            "{} is not under a folder the server allows (SOURCE_FOLDER_ROOTS: {})",
            real.display(),
            roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
        )));
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
        let allowed = vec!["team-docs".to_string(), "rag-engine".to_string()];
        assert!(allowed_bucket("s3://team-docs/hr/", "rag-engine", &allowed).is_ok());
        assert!(matches!(allowed_bucket("s3://rag-engine/workspaces/other/", "rag-engine", &allowed), Err(SourceError::NotAllowed(_))));
        assert!(matches!(allowed_bucket("s3://elsewhere/x", "rag-engine", &allowed), Err(SourceError::NotAllowed(_))));
        assert!(matches!(allowed_bucket("s3://team-docs/x", "rag-engine", &[]), Err(SourceError::NotAllowed(_))));
    }

    #[test]
    fn folders_must_be_under_an_allowed_root_without_escaping_it() {
        let root = tempfile::tempdir().unwrap();
        let inside = root.path().join("team");
        std::fs::create_dir(&inside).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let roots = vec![root.path().to_path_buf()];
        assert!(matches!(allowed_folder(&inside, &roots), Ok(Location::Folder(_))));
        assert!(matches!(allowed_folder(outside.path(), &roots), Err(SourceError::NotAllowed(_))));
        assert!(matches!(allowed_folder(&inside.join("..").join(".."), &roots), Err(SourceError::Invalid(_))));
        assert!(matches!(allowed_folder(std::path::Path::new("relative"), &roots), Err(SourceError::Invalid(_))));
        assert!(matches!(allowed_folder(&inside, &[]), Err(SourceError::NotAllowed(_))));
        // A symlink inside the root that points outside it is judged by where it points.
        let link = root.path().join("escape");
        std::os::unix::fs::symlink(outside.path(), &link).unwrap();
        assert!(matches!(allowed_folder(&link, &roots), Err(SourceError::NotAllowed(_))));
    }
}
