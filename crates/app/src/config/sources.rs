//! Sources a workspace follows (`rag-engine sources`, `run all`).

use clap::Args;

use super::RevisionRetentionChoice;

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Sources and revisions (environment variable, default)")]
pub struct SourceSettings {
    /// Folders on this server that sources may follow (':'-separated absolute paths; a source's folder must lie
    /// under one of them, its real path with symlinks resolved). A root holding `{workspace}` is each workspace's own
    /// (its id put in), the only kind its users may follow through the API; the others are for the operator's CLI.
    /// Empty: no folder may be followed.
    #[arg(long, env = "SOURCE_FOLDER_ROOTS", global = true)]
    pub source_folder_roots: Option<String>,
    /// Buckets S3 sources may follow (','-separated), read with the server's own object-store settings (S3_ENDPOINT,
    /// S3_ACCESS_KEY, …); never S3_BUCKET itself. `bucket/prefix/{workspace}/` is each workspace's own prefix, the
    /// only kind its users may follow through the API; a bare bucket is for the operator's CLI. Empty: none.
    #[arg(long, env = "SOURCE_S3_BUCKETS", global = true)]
    pub source_s3_buckets: Option<String>,
    /// What stays of a document's revisions search no longer reads: `cited` keeps the text of those an answer cites
    /// (the others' go ten minutes after they were superseded), `all` keeps every one.
    #[arg(long, env = "REVISION_RETENTION", global = true, value_enum, default_value_t = RevisionRetentionChoice::Cited)]
    pub revision_retention: RevisionRetentionChoice,
    /// Seconds between syncs of every source by `run all` and `sources sync` without --once; 0: only on demand.
    #[arg(long, env = "SOURCE_SYNC_INTERVAL_SECS", global = true, default_value_t = 300)]
    pub source_sync_interval_secs: u64,
}

impl SourceSettings {
    /// The allowed roots, empty entries dropped (an entry may hold
    /// `{workspace}`: a workspace's own root).
    pub fn folder_roots(&self) -> Vec<String> {
        self.source_folder_roots.as_deref().unwrap_or("").split(':').map(str::trim).filter(|p| !p.is_empty()).map(str::to_string).collect()
    }

    /// The buckets S3 sources may follow.
    pub fn buckets(&self) -> Vec<String> {
        self.source_s3_buckets.as_deref().unwrap_or("").split(',').map(str::trim).filter(|b| !b.is_empty()).map(str::to_string).collect()
    }

    /// How long a superseded revision no answer cites keeps its text, or
    /// None when every revision is kept.
    pub fn uncited_revisions_kept_for(&self) -> Option<std::time::Duration> {
        match self.revision_retention {
            RevisionRetentionChoice::Cited => Some(UNCITED_REVISION_GRACE),
            RevisionRetentionChoice::All => None,
        }
    }
}

/// A superseded revision's text stays this long whatever cites it: an
/// answer being written when the document changed is projected well
/// within it.
pub const UNCITED_REVISION_GRACE: std::time::Duration = std::time::Duration::from_secs(600);
