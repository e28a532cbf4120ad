// Kept whole at ~490 lines of code: one sync, listed, compared, fetched, announced and checkpointed in order, so a crash at any line is reasoned about in one place.
//! One sync of one source: list it, compare with its checkpoint
//! ([`crate::plan`]), fetch only what the listing says changed, announce
//! through the upload path, and record each file's outcome.
//!
//! Crash safety, step by step: a revision about to be announced is written
//! to the checkpoint first (`pending_sha256`, `pending_revision`), then the
//! event is produced with an id derived from the document, the revision and
//! the content hash, then the checkpoint is confirmed. Killed between any
//! two, a sync run again announces the same revision with the same event
//! id (the read models apply it once) or finds it confirmed; a removal is
//! produced again with its one id. Nothing is lost: the checkpoint moves
//! only after the broker has the event.

use std::path::PathBuf;

use rag_blobs::BlobStore;
use rag_bus::EventProducer;
use rag_events::{DocumentDeleted, Envelope};
use rag_store::sources::{self, SourceFileRow, SourceRow, SyncCounts};
use rag_store::sqlx::PgPool;
use tracing::{info, warn};
use uuid::Uuid;

use crate::plan::{self, Listed, Step, FAILED, PRESENT, REMOVED};
use crate::{list, Location, SourceError};

/// What a synced file may be, as for an upload.
#[derive(Debug, Clone, Copy)]
pub struct SyncLimits {
    /// `UPLOAD_MAX_BYTES`.
    pub max_bytes: u64,
    /// `WORKSPACE_MAX_BYTES`: the source's files count against it.
    pub workspace_max_bytes: u64,
}

/// Where a sync is, for a progress line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress<'a> {
    /// Objects listed so far.
    Listing(usize),
    /// Steps done of all, and the file of the current one.
    File { done: usize, of: usize, key: &'a str },
}

/// Where sources may be, as the server's settings say now: a source
/// whose place they no longer name is not synced.
#[derive(Debug, Clone, Default)]
pub struct SyncPlaces {
    /// `SOURCE_FOLDER_ROOTS`.
    pub folder_roots: Vec<String>,
    /// `SOURCE_S3_BUCKETS`.
    pub buckets: Vec<String>,
    /// `S3_BUCKET`, never followed.
    pub own_bucket: String,
}

pub struct Syncer {
    pub pool: PgPool,
    pub places: SyncPlaces,
    /// The project's object store: originals go here (a bucket source is
    /// read through the same server and credentials).
    pub blobs: BlobStore,
    pub producer: EventProducer,
    pub limits: SyncLimits,
    /// The envelope's producer.
    pub producer_name: String,
}

/// What one step did.
enum Done {
    Added,
    Changed,
    /// Fetched; the content was what was announced already.
    Same,
    Removed,
    Failed,
}

/// A file fetched to local disk and hashed.
struct Fetched {
    path: PathBuf,
    size: u64,
    sha256: String,
    /// Holds a bucket object's temporary copy until it is stored.
    _temp: tempfile::NamedTempFile,
}

/// Why a file is not announced: a stable code and a sentence, said on its
/// checkpoint row.
struct Refused(&'static str, String);

impl Syncer {
    /// Syncs `source` once; the counts of what it did. An error that a
    /// retry may mend (the broker, the object store, the database) stops
    /// the sync and is recorded on the source: what was confirmed stays,
    /// and the next sync goes on from there.
    pub async fn sync(&self, source: &SourceRow, progress: &(dyn Fn(Progress<'_>) + Sync)) -> Result<SyncCounts, SourceError> {
        // One sync of a source at a time, across processes; released when
        // this one ends or is cut short.
        let lock = sources::hold_sync_lock(&self.pool, source.id).await?;
        sources::sync_started(&self.pool, source.id).await?;
        let result = self.sync_inner(source, progress).await;
        drop(lock);
        match &result {
            Ok(counts) => sources::sync_ended(&self.pool, source.id, Ok(counts)).await?,
            Err(e) => sources::sync_ended(&self.pool, source.id, Err(&e.to_string())).await?,
        }
        result
    }

    async fn sync_inner(&self, source: &SourceRow, progress: &(dyn Fn(Progress<'_>) + Sync)) -> Result<SyncCounts, SourceError> {
        let stored = Location::from_stored(&source.kind, &source.location)?;
        // Checked again each time: the settings may have changed, and a
        // folder may have become a symlink since it was added.
        let location = match &stored {
            Location::Folder(path) => crate::allowed_folder(path, &self.places.folder_roots, crate::Adder::Operator, &source.workspace_id)?,
            Location::S3 { .. } => crate::allowed_bucket(
                &stored.stored(),
                &self.places.own_bucket,
                &self.places.buckets,
                crate::Adder::Operator,
                &source.workspace_id,
            )?,
        };
        let listed = match &location {
            Location::Folder(root) => {
                let root = root.clone();
                tokio::task::spawn_blocking(move || list::folder(&root))
                    .await
                    .map_err(|e| SourceError::List { path: source.location.clone(), message: e.to_string() })??
            }
            Location::S3 { bucket, prefix } => {
                list::bucket(&self.blobs.in_bucket(bucket), prefix, |n| progress(Progress::Listing(n))).await?
            }
        };
        let seen = sources::files(&self.pool, source.id).await?;
        // An empty listing where files were seen is more likely an unmounted
        // folder or a wrong prefix than every file removed: nothing is
        // deleted on its word.
        let present = seen.iter().filter(|f| f.state != plan::REMOVED).count();
        if listed.is_empty() && present > 0 {
            return Err(SourceError::List {
                path: source.location.clone(),
                message: format!("it lists no file where {present} were seen; nothing is deleted (remove the source to let them go)"),
            });
        }
        let plan = plan::plan(&listed, &seen);
        let mut counts = SyncCounts { seen: listed.len() as i32, unchanged: plan.unchanged as i32, ..SyncCounts::default() };
        let of = plan.steps.len();
        for (done, step) in plan.steps.iter().enumerate() {
            let key = match step {
                Step::Add { listed, .. } | Step::Check { listed, .. } => listed.key.as_str(),
                Step::Remove { seen } => seen.key.as_str(),
            };
            progress(Progress::File { done, of, key });
            match self.step(source, &location, step, &mut counts.fetched).await? {
                Done::Added => counts.added += 1,
                Done::Changed => counts.changed += 1,
                Done::Same => counts.unchanged += 1,
                Done::Removed => counts.removed += 1,
                Done::Failed => counts.failed += 1,
            }
        }
        progress(Progress::File { done: of, of, key: "" });
        info!(workspace_id = %source.workspace_id, source_id = %source.id, seen = counts.seen, added = counts.added,
              changed = counts.changed, removed = counts.removed, failed = counts.failed, "source synced");
        Ok(counts)
    }

    async fn step(&self, source: &SourceRow, location: &Location, step: &Step<'_>, fetched: &mut i32) -> Result<Done, SourceError> {
        match step {
            Step::Remove { seen } => self.remove(source, seen).await,
            Step::Add { listed, generation } => {
                let document = plan::document_id(source.id, &listed.key, *generation);
                let fresh = SourceFileRow {
                    key: listed.key.clone(),
                    generation: *generation,
                    document_id: document,
                    listed_version: None,
                    size_bytes: None,
                    sha256: None,
                    revision: 0,
                    pending_sha256: None,
                    pending_revision: None,
                    state: PRESENT.into(),
                    failure: None,
                    failure_code: None,
                };
                self.check(source, location, listed, &fresh, fetched).await
            }
            Step::Check { listed, seen } => self.check(source, location, listed, seen, fetched).await,
        }
    }

    /// Fetches a listed file and announces it when its content is new.
    /// A file whose document was deleted meanwhile (by a user, through the
    /// API) comes back as a new document when it changes: a deleted
    /// document stays deleted.
    async fn check(
        &self,
        source: &SourceRow,
        location: &Location,
        listed: &Listed,
        seen: &SourceFileRow,
        fetched_count: &mut i32,
    ) -> Result<Done, SourceError> {
        // A revision written as pending may have reached the broker before
        // the sync that wrote it died: it counts as announced (a different
        // content now is the next revision, never the same number again; a
        // refused or removed file still deletes it).
        let reborn;
        let seen = if seen.announced() > 0
            && rag_store::documents::status_of(&self.pool, seen.document_id).await? == Some(rag_store::documents::DocumentStatus::Deleted)
        {
            let generation = seen.generation + 1;
            reborn = SourceFileRow {
                generation,
                document_id: plan::document_id(source.id, &listed.key, generation),
                sha256: None,
                revision: 0,
                pending_sha256: None,
                pending_revision: None,
                ..seen.clone()
            };
            &reborn
        } else {
            seen
        };
        let fail = |why: Refused| async move {
            warn!(workspace_id = %source.workspace_id, source_id = %source.id, key = %listed.key, code = why.0, reason = %why.1,
                  "source file refused");
            let row = SourceFileRow {
                listed_version: Some(listed.version.clone()),
                size_bytes: Some(listed.size as i64),
                revision: seen.announced(),
                pending_sha256: None,
                pending_revision: None,
                state: FAILED.into(),
                failure: Some(why.1),
                failure_code: Some(why.0.to_string()),
                ..seen.clone()
            };
            sources::put_file(&self.pool, source.id, &row).await?;
            Ok::<Done, SourceError>(Done::Failed)
        };
        let filename = listed.key.rsplit('/').next().unwrap_or(&listed.key).to_string();
        let Some(format) = rag_docparse::detect_format("application/octet-stream", &filename) else {
            return fail(Refused(
                "unsupported_type",
                format!("{filename:?} is not a supported document type: {}", rag_docparse::Format::all_names()),
            ))
            .await;
        };
        if listed.size > self.limits.max_bytes {
            return fail(Refused(
                "too_large",
                format!("the file is {} bytes, over the limit of {} (UPLOAD_MAX_BYTES)", listed.size, self.limits.max_bytes),
            ))
            .await;
        }
        *fetched_count += 1;
        let fetched = match self.fetch(location, listed).await? {
            Ok(f) => f,
            Err(why) => return fail(why).await,
        };
        if fetched.size == 0 {
            return fail(Refused("empty", "the file is empty".into())).await;
        }
        let confirmed = |revision: i32| SourceFileRow {
            listed_version: Some(listed.version.clone()),
            size_bytes: Some(fetched.size as i64),
            sha256: Some(fetched.sha256.clone()),
            revision,
            pending_sha256: None,
            pending_revision: None,
            state: PRESENT.into(),
            failure: None,
            failure_code: None,
            ..seen.clone()
        };
        if seen.sha256.as_deref() == Some(fetched.sha256.as_str()) && seen.pending_sha256.is_none() && seen.revision > 0 {
            // Touched, or renamed back: the content announced already.
            sources::put_file(&self.pool, source.id, &confirmed(seen.revision)).await?;
            return Ok(Done::Same);
        }
        let announced = seen.announced();
        let revision = match (seen.pending_sha256.as_deref(), seen.pending_revision) {
            (Some(sha), Some(r)) if sha == fetched.sha256 => r,
            _ if announced == 0 => rag_events::FIRST_REVISION,
            _ => rag_store::documents::allocate_revision(&self.pool, &source.workspace_id, seen.document_id, announced).await?,
        };
        if announced == 0 {
            // A new file counts against the workspace's quota (a change
            // replaces bytes already counted, and is let through).
            let stored = u64::try_from(rag_store::documents::stored_bytes(&self.pool, &source.workspace_id).await?).unwrap_or(0);
            if stored.saturating_add(fetched.size) > self.limits.workspace_max_bytes {
                return fail(Refused(
                    "quota_exceeded",
                    format!(
                        "the workspace holds {stored} bytes; this file of {} would pass its quota of {} (WORKSPACE_MAX_BYTES)",
                        fetched.size, self.limits.workspace_max_bytes
                    ),
                ))
                .await;
            }
        }
        // Written before the event: a sync killed after producing it
        // announces this same revision again, with the same event id.
        let pending = SourceFileRow { pending_sha256: Some(fetched.sha256.clone()), pending_revision: Some(revision), ..seen.clone() };
        sources::put_file(&self.pool, source.id, &pending).await?;
        let doc = rag_upload::NewDocument {
            workspace_id: source.workspace_id.clone(),
            filename: filename.clone(),
            content_type: format.content_type().to_string(),
            uploaded_by: format!("source:{}", source.id),
            metadata: [
                ("source".to_string(), source.kind.clone()),
                ("source_id".to_string(), source.id.to_string()),
                ("source_key".to_string(), listed.key.clone()),
            ]
            .into_iter()
            .collect(),
            producer: self.producer_name.clone(),
            revision_of: Some(rag_upload::NextRevision {
                document_id: seen.document_id.to_string(),
                revision,
                replaces_sha256: seen.sha256.clone(),
            }),
            event_id: Some(plan::upload_event_id(seen.document_id, revision, &fetched.sha256)),
        };
        let original = rag_upload::Original { path: &fetched.path, size: fetched.size, sha256: &fetched.sha256 };
        rag_upload::store_and_announce(&self.blobs, &self.producer, original, doc).await?;
        sources::put_file(&self.pool, source.id, &confirmed(revision)).await?;
        info!(workspace_id = %source.workspace_id, source_id = %source.id, document_id = %seen.document_id, key = %listed.key,
              revision, "source file announced");
        Ok(if announced == 0 { Done::Added } else { Done::Changed })
    }

    /// The file's bytes, read once into a temporary copy and hashed as
    /// they are read (what is stored and announced is exactly what was
    /// hashed, whatever happens to the file meanwhile); a refusal when the
    /// file cannot be read as a plain file under the folder, grows past the
    /// limit, or the object store refuses the object.
    async fn fetch(&self, location: &Location, listed: &Listed) -> Result<Result<Fetched, Refused>, SourceError> {
        let limit = self.limits.max_bytes;
        match location {
            Location::Folder(root) => {
                let (root, path) = (root.clone(), root.join(&listed.key));
                let copied = tokio::task::spawn_blocking(move || copy_plain_file(&root, &path, limit))
                    .await
                    .map_err(|e| SourceError::List { path: listed.key.clone(), message: e.to_string() })?;
                Ok(copied.map(|(temp, size, sha256)| Fetched { path: temp.path().to_path_buf(), size, sha256, _temp: temp }))
            }
            Location::S3 { bucket, prefix } => {
                let key = join_key(prefix, &listed.key);
                let bytes = match self.blobs.in_bucket(bucket).get(&key).await {
                    Ok(bytes) => bytes,
                    // Access denied, gone since the listing: this object's
                    // refusal, not the whole sync's.
                    Err(e) if !e.is_transient() => return Ok(Err(Refused("unreadable", format!("the object store refused it: {e}")))),
                    Err(e) => return Err(e.into()),
                };
                if bytes.len() as u64 > limit {
                    return Ok(Err(Refused(
                        "too_large",
                        format!("the object is {} bytes, over the limit of {limit} (UPLOAD_MAX_BYTES)", bytes.len()),
                    )));
                }
                let temp = write_temp(&bytes).map_err(|e| SourceError::List { path: key.clone(), message: e.to_string() })?;
                let sha256 = hex_sha256(&bytes);
                Ok(Ok(Fetched { path: temp.path().to_path_buf(), size: bytes.len() as u64, sha256, _temp: temp }))
            }
        }
    }

    /// A file gone from the source: its document is deleted (when one was
    /// announced), and a file added again later is a new document.
    async fn remove(&self, source: &SourceRow, seen: &SourceFileRow) -> Result<Done, SourceError> {
        if seen.announced() > 0 {
            let by = format!("source:{}", source.id);
            self.producer.send(&deletion(&source.workspace_id, &self.producer_name, seen.document_id, &by)).await?;
            info!(workspace_id = %source.workspace_id, source_id = %source.id, document_id = %seen.document_id, key = %seen.key,
                  "source file removed; document deleted");
        }
        let row = SourceFileRow {
            generation: seen.generation + 1,
            pending_sha256: None,
            pending_revision: None,
            state: REMOVED.into(),
            failure: None,
            failure_code: None,
            ..seen.clone()
        };
        sources::put_file(&self.pool, source.id, &row).await?;
        Ok(Done::Removed)
    }
}

/// The DocumentDeleted of a source's document, with its one id.
fn deletion(workspace_id: &str, producer_name: &str, document: Uuid, deleted_by: &str) -> DocumentDeleted {
    let id = plan::deleted_event_id(document).to_string();
    let mut envelope = Envelope::originating(workspace_id, producer_name);
    envelope.event_id = id.clone();
    envelope.correlation_id = id;
    DocumentDeleted { envelope, document_id: document.to_string(), deleted_by: deleted_by.into() }
}

fn join_key(prefix: &str, key: &str) -> String {
    if prefix.is_empty() || prefix.ends_with('/') {
        format!("{prefix}{key}")
    } else {
        format!("{prefix}/{key}")
    }
}

fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Copies the plain file at `path` to a temporary file, hashing it, at most
/// `limit` bytes: opened without following a final symlink, and the opened
/// file's own path (`/proc/self/fd`) must lie under `root`, so a folder
/// swapped for a symlink after the listing cannot lead outside it.
fn copy_plain_file(root: &std::path::Path, path: &std::path::Path, limit: u64) -> Result<(tempfile::NamedTempFile, u64, String), Refused> {
    use sha2::Digest;
    use std::io::{Read, Write};
    use std::os::unix::fs::OpenOptionsExt;
    let unreadable = |e: std::io::Error| Refused("unreadable", format!("cannot read it: {e}"));
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path).map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(Refused("unreadable", "not a plain file".into()));
    }
    use std::os::fd::AsRawFd;
    let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).map_err(unreadable)?;
    let real_root = root.canonicalize().map_err(unreadable)?;
    if !real.starts_with(&real_root) {
        return Err(Refused("unreadable", "it leads outside the followed folder (a symlink is not followed)".into()));
    }
    let mut temp = tempfile::NamedTempFile::new().map_err(unreadable)?;
    let mut hasher = sha2::Sha256::new();
    let (mut size, mut buf, mut reader) = (0u64, vec![0u8; 1 << 20], file.take(limit + 1));
    loop {
        let n = reader.read(&mut buf).map_err(unreadable)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        if size > limit {
            return Err(Refused("too_large", format!("the file is over the limit of {limit} bytes (UPLOAD_MAX_BYTES)")));
        }
        hasher.update(&buf[..n]);
        temp.write_all(&buf[..n]).map_err(unreadable)?;
    }
    temp.flush().map_err(unreadable)?;
    Ok((temp, size, hex::encode(hasher.finalize())))
}

fn write_temp(bytes: &[u8]) -> std::io::Result<tempfile::NamedTempFile> {
    use std::io::Write;
    let mut f = tempfile::NamedTempFile::new()?;
    f.write_all(bytes)?;
    f.flush()?;
    Ok(f)
}

/// Deletes the documents a source's files are now (`sources remove
/// --with-documents`): a DocumentDeleted each, with the id a removal of the
/// file would carry, so asking twice deletes once. How many.
pub async fn delete_documents(
    pool: &PgPool,
    producer: &EventProducer,
    source: &SourceRow,
    producer_name: &str,
    deleted_by: &str,
) -> Result<usize, SourceError> {
    let mut deleted = 0;
    for file in sources::files(pool, source.id).await?.into_iter().filter(|f| f.state != REMOVED && f.announced() > 0) {
        producer.send(&deletion(&source.workspace_id, producer_name, file.document_id, deleted_by)).await?;
        deleted += 1;
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    #[test]
    fn keys_join_their_prefix() {
        assert_eq!(super::join_key("hr/", "a.md"), "hr/a.md");
        assert_eq!(super::join_key("hr", "a.md"), "hr/a.md");
        assert_eq!(super::join_key("", "a.md"), "a.md");
    }
}
