// Kept whole at ~450 lines: the document routes share their ownership checks and the upload's spooling.
//! Documents: upload (multipart, spooled to a temporary file while hashed,
//! then stored in S3 and announced as DocumentUploaded), list, get, delete
//! (DocumentDeleted) and the raw-text viewer.

use std::collections::HashMap;

use axum::extract::multipart::{Field, MultipartError};
use axum::extract::{Multipart, Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use rag_events::{DocumentDeleted, Envelope};
use rag_store::documents::{self, DocumentStatus};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use uuid::Uuid;

use super::{apply_now, next_cursor, owned_workspace, PageQuery, Recorded};
use crate::auth::AuthUser;
use crate::error::{ApiError, ErrorBody};
use crate::model::{DeleteAccepted, Document, DocumentList, RawText, UploadAccepted, UploadForm};
use crate::AppState;

const PRODUCER: &str = concat!("rag-engine/api@", env!("CARGO_PKG_VERSION"));

/// Past the limit, an upload's remaining bytes are read (up to this much)
/// and discarded so the client receives the 413 instead of a reset
/// connection.
const DRAIN_AFTER_LIMIT: u64 = 16 * 1024 * 1024;

fn multipart_error(e: MultipartError) -> ApiError {
    let status = e.status();
    let code = ApiError::code_for_status(status);
    ApiError::new(status, code, format!("reading the upload: {}", e.body_text()))
}

/// A filename is only a label (objects are stored by content hash), but a
/// name carrying a path is refused rather than silently rewritten.
fn checked_filename(name: &str) -> Result<&str, ApiError> {
    let bad = |why: &str| ApiError::bad_request("invalid_filename", format!("filename {name:?} {why}"));
    if name.trim().is_empty() {
        return Err(bad("is empty"));
    }
    if name.len() > 255 {
        return Err(bad("is longer than 255 bytes"));
    }
    if name.contains(['/', '\\']) || name == "." || name == ".." || name.starts_with("..") {
        return Err(bad("contains a path; send the file's name only"));
    }
    if name.chars().any(char::is_control) {
        return Err(bad("contains control characters"));
    }
    // Bidirectional overrides and invisible characters make a name show as
    // something else ("invoice\u{202E}fdp.exe" displays as "invoiceexe.pdf").
    if name.chars().any(is_deceptive) {
        return Err(bad("contains invisible or text-direction characters"));
    }
    Ok(name)
}

fn is_deceptive(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}'
        | '\u{E0000}'..='\u{E007F}')
}

fn quota_exceeded(stored: u64, size: u64, quota: u64) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "storage_quota_exceeded",
        format!("the workspace holds {stored} bytes; a file of {size} bytes would pass its quota of {quota} (WORKSPACE_MAX_BYTES): delete documents first"),
    )
}

/// Largest `metadata` field of an upload.
const METADATA_MAX_BYTES: usize = 16 * 1024;

/// The first bytes of a spooled upload, which [`rag_docparse::sniff`] judges.
async fn read_head(spooled: &Spooled) -> Result<Vec<u8>, ApiError> {
    use tokio::io::AsyncReadExt;
    let io = |e: std::io::Error| ApiError::internal(format!("reading the spooled upload: {e}"));
    let file = tokio::fs::File::open(spooled.file.path()).await.map_err(io)?;
    let mut head = Vec::with_capacity(8192);
    file.take(8192).read_to_end(&mut head).await.map_err(io)?;
    Ok(head)
}

struct Spooled {
    file: tempfile::NamedTempFile,
    size: u64,
    sha256: String,
}

/// Streams a field into a temporary file, hashing as it goes; never holds
/// the document in memory.
async fn spool(field: &mut Field<'_>, max: u64) -> Result<Spooled, ApiError> {
    let io = |e: std::io::Error| ApiError::internal(format!("spooling the upload: {e}"));
    let file = tempfile::NamedTempFile::new().map_err(io)?;
    let mut out = tokio::fs::File::from_std(file.reopen().map_err(io)?);
    let mut hasher = Sha256::new();
    let mut size: u64 = 0;
    while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
        size += chunk.len() as u64;
        if size > max {
            let mut drained = 0u64;
            while drained < DRAIN_AFTER_LIMIT {
                match field.chunk().await {
                    Ok(Some(more)) => drained += more.len() as u64,
                    _ => break,
                }
            }
            return Err(ApiError::too_large(format!("the file is over the limit of {max} bytes (UPLOAD_MAX_BYTES)")));
        }
        hasher.update(&chunk);
        out.write_all(&chunk).await.map_err(io)?;
    }
    out.flush().await.map_err(io)?;
    out.sync_all().await.map_err(io)?;
    Ok(Spooled { file, size, sha256: hex::encode(hasher.finalize()) })
}

/// Upload a document (multipart field `file`; optional field `metadata`, a
/// JSON object of strings). Answers 202 once the original is stored and
/// DocumentUploaded is recorded; parsing and indexing follow.
#[utoipa::path(post, path = "/v1/workspaces/{ws}/documents", tag = "documents",
    params(("ws" = String, Path, description = "Workspace id")),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses((status = 202, body = UploadAccepted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
              (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn upload(
    State(state): State<AppState>,
    user: AuthUser,
    Path(ws): Path<String>,
    headers: axum::http::HeaderMap,
    multipart: Multipart,
) -> Result<(StatusCode, Json<UploadAccepted>), ApiError> {
    owned_workspace(&state, &user, &ws).await?;
    receive(state, user, ws, headers, multipart, None).await
}

/// Replace a document's bytes: the upload becomes a new revision of the
/// same document (same form as an upload). The revision before stays
/// searchable until this one is ingested, then search reads this one; an
/// earlier answer's citations keep opening the text they quoted. Bytes
/// identical to the newest revision's change nothing (200, that revision).
#[utoipa::path(put, path = "/v1/workspaces/{ws}/documents/{id}", tag = "documents",
    params(("ws" = String, Path, description = "Workspace id"), ("id" = Uuid, Path, description = "Document id")),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses((status = 202, body = UploadAccepted), (status = 200, body = UploadAccepted), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 413, body = ErrorBody),
              (status = 415, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn replace(
    State(state): State<AppState>,
    user: AuthUser,
    Path((ws, id)): Path<(String, Uuid)>,
    headers: axum::http::HeaderMap,
    multipart: Multipart,
) -> Result<(StatusCode, Json<UploadAccepted>), ApiError> {
    let doc = owned_document(&state, &user, &ws, id).await?;
    receive(state, user, ws, headers, multipart, Some(doc)).await
}

/// Receives one uploaded file: a new document, or a new revision of
/// `replaces`.
async fn receive(
    state: AppState,
    user: AuthUser,
    ws: String,
    headers: axum::http::HeaderMap,
    mut multipart: Multipart,
    replaces: Option<documents::DocumentRow>,
) -> Result<(StatusCode, Json<UploadAccepted>), ApiError> {
    // Held until the answer: each upload in flight holds a temporary file
    // and a connection.
    let _slot = state.limits().upload(&user.user_id)?;
    // A declared length that cannot fit is refused before a byte is spooled;
    // the real size is checked again below.
    let quota = state.config().workspace_max_bytes;
    let stored = u64::try_from(documents::stored_bytes(state.pool(), &ws).await?).unwrap_or(0);
    let declared = headers.get(axum::http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if let Some(declared) = declared {
        let largest_file = declared.saturating_sub(crate::MULTIPART_OVERHEAD);
        if stored.saturating_add(largest_file) > quota {
            return Err(quota_exceeded(stored, largest_file, quota));
        }
    }
    let max = state.config().upload_max_bytes;
    let mut upload: Option<(String, String, Spooled)> = None;
    let mut metadata: HashMap<String, String> = HashMap::new();
    while let Some(mut field) = multipart.next_field().await.map_err(multipart_error)? {
        match field.name() {
            Some("file") => {
                if upload.is_some() {
                    return Err(ApiError::bad_request("too_many_files", "send one file per upload"));
                }
                let filename = checked_filename(field.file_name().unwrap_or(""))?.to_string();
                // Echoed in errors only, bounded: what is stored is the
                // format's canonical type below.
                let sent_type: String = field.content_type().unwrap_or("application/octet-stream").chars().take(100).collect();
                let format = rag_docparse::detect_format(&sent_type, &filename).ok_or_else(|| {
                    ApiError::unsupported_media_type(format!(
                        "{filename:?} ({sent_type}) is not a supported document type: {}",
                        rag_docparse::Format::all_names()
                    ))
                })?;
                let spooled = spool(&mut field, max).await?;
                let head = read_head(&spooled).await?;
                rag_docparse::sniff(format, &filename, &head)
                    .map_err(|why| ApiError::unsupported_media_type(format!("{filename:?} was sent as {sent_type} but {why}")))?;
                // Stored as the format's one canonical type, whatever the
                // client spelled (parameters, case, length).
                upload = Some((filename, format.content_type().to_string(), spooled));
            }
            Some("metadata") => {
                // Checked while it streams in, not after it is all read.
                let mut bytes = Vec::new();
                while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
                    if bytes.len() + chunk.len() > METADATA_MAX_BYTES {
                        return Err(ApiError::bad_request("invalid_metadata", "metadata is over 16 KiB"));
                    }
                    bytes.extend_from_slice(&chunk);
                }
                let text = String::from_utf8(bytes).map_err(|_| ApiError::bad_request("invalid_metadata", "metadata is not UTF-8"))?;
                metadata = serde_json::from_str(&text)
                    .map_err(|e| ApiError::bad_request("invalid_metadata", format!("metadata must be a JSON object of strings: {e}")))?;
                if metadata.iter().any(|(k, v)| k.contains('\0') || v.contains('\0')) {
                    return Err(ApiError::bad_request("invalid_metadata", "metadata contains NUL characters"));
                }
            }
            // Unknown fields are skipped, for forward compatibility.
            _ => while let Ok(Some(_)) = field.chunk().await {},
        }
    }
    let (filename, content_type, spooled) =
        upload.ok_or_else(|| ApiError::bad_request("missing_file", "the multipart field `file` is required"))?;
    if spooled.size == 0 {
        return Err(ApiError::bad_request("empty_file", format!("{filename:?} is empty")));
    }
    // Checked again once the size is known; two uploads racing may pass
    // it together by at most one upload each (UPLOAD_MAX_BYTES).
    let stored = u64::try_from(documents::stored_bytes(state.pool(), &ws).await?).unwrap_or(0);
    if stored.saturating_add(spooled.size) > quota {
        return Err(quota_exceeded(stored, spooled.size, quota));
    }
    metadata.insert("source".into(), "api".into());
    let revision_of = match &replaces {
        Some(doc) if doc.sha256.as_deref() == Some(spooled.sha256.as_str()) => {
            // The same bytes again: no new revision, nothing to do.
            return Ok((
                StatusCode::OK,
                Json(UploadAccepted {
                    document_id: doc.id,
                    workspace_id: ws,
                    status: doc.status,
                    filename,
                    content_type,
                    size_bytes: spooled.size,
                    sha256: spooled.sha256,
                    revision: doc.latest_revision,
                }),
            ));
        }
        Some(doc) => Some(rag_upload::NextRevision {
            document_id: doc.id.to_string(),
            revision: documents::allocate_revision(state.pool(), &ws, doc.id, doc.latest_revision).await?,
            replaces_sha256: doc.sha256.clone(),
        }),
        None => None,
    };
    let doc = rag_upload::NewDocument {
        workspace_id: ws.clone(),
        filename: filename.clone(),
        content_type: content_type.clone(),
        uploaded_by: user.user_id.clone(),
        metadata,
        producer: PRODUCER.into(),
        revision_of,
        event_id: None,
    };
    let original = rag_upload::Original { path: spooled.file.path(), size: spooled.size, sha256: &spooled.sha256 };
    let event = rag_upload::store_and_announce(state.blobs(), state.producer(), original, doc).await?;
    drop(spooled.file);
    let document_id = Uuid::parse_str(&event.document_id).map_err(|e| ApiError::internal(e.to_string()))?;
    apply_now(&state, Recorded::Uploaded(&event)).await;
    Ok((
        StatusCode::ACCEPTED,
        Json(UploadAccepted {
            document_id,
            workspace_id: ws,
            status: DocumentStatus::Uploaded,
            filename,
            content_type,
            size_bytes: spooled.size,
            sha256: spooled.sha256,
            revision: event.revision,
        }),
    ))
}

pub(crate) async fn owned_document(state: &AppState, user: &AuthUser, ws: &str, id: Uuid) -> Result<documents::DocumentRow, ApiError> {
    owned_workspace(state, user, ws).await?;
    match documents::get(state.pool(), ws, id).await? {
        Some(doc) if doc.status != DocumentStatus::Deleted => Ok(doc),
        _ => Err(ApiError::not_found("document")),
    }
}

/// Documents of the workspace, newest first.
#[utoipa::path(get, path = "/v1/workspaces/{ws}/documents", tag = "documents",
    params(("ws" = String, Path, description = "Workspace id"), PageQuery),
    responses((status = 200, body = DocumentList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Path(ws): Path<String>,
    Query(page): Query<PageQuery>,
) -> Result<Json<DocumentList>, ApiError> {
    owned_workspace(&state, &user, &ws).await?;
    let limit = page.limit()?;
    let mut rows = documents::page(state.pool(), &ws, page.after()?, limit + 1).await?;
    let epoch = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
    let next_cursor = next_cursor(&mut rows, limit, |r| (r.uploaded_at.unwrap_or(epoch), r.id));
    Ok(Json(DocumentList { documents: rows.into_iter().map(Into::into).collect(), next_cursor }))
}

/// A document: status, failure reason, pages, active chunking version.
#[utoipa::path(get, path = "/v1/workspaces/{ws}/documents/{id}", tag = "documents",
    params(("ws" = String, Path, description = "Workspace id"), ("id" = Uuid, Path, description = "Document id")),
    responses((status = 200, body = Document), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get(State(state): State<AppState>, user: AuthUser, Path((ws, id)): Path<(String, Uuid)>) -> Result<Json<Document>, ApiError> {
    Ok(Json(owned_document(&state, &user, &ws, id).await?.into()))
}

/// Delete a document: it leaves listings and search at once (DocumentDeleted).
#[utoipa::path(delete, path = "/v1/workspaces/{ws}/documents/{id}", tag = "documents",
    params(("ws" = String, Path, description = "Workspace id"), ("id" = Uuid, Path, description = "Document id")),
    responses((status = 202, body = DeleteAccepted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete(
    State(state): State<AppState>,
    user: AuthUser,
    Path((ws, id)): Path<(String, Uuid)>,
) -> Result<(StatusCode, Json<DeleteAccepted>), ApiError> {
    owned_document(&state, &user, &ws, id).await?;
    let event =
        DocumentDeleted { envelope: Envelope::originating(&ws, PRODUCER), document_id: id.to_string(), deleted_by: user.user_id.clone() };
    let asked = std::time::Instant::now();
    state.producer().send(&event).await?;
    let produced = asked.elapsed();
    apply_now(&state, Recorded::Deleted(&event)).await;
    // How long the broker and Postgres each took: a slow deletion says which.
    tracing::info!(workspace_id = %ws, document_id = %id, event_id = %event.envelope.event_id,
        produce_ms = produced.as_millis() as u64, apply_ms = (asked.elapsed() - produced).as_millis() as u64, "document deleted");
    Ok((StatusCode::ACCEPTED, Json(DeleteAccepted { document_id: id, status: DocumentStatus::Deleted })))
}

/// Which revision of a document to read.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RevisionQuery {
    /// A revision of the document (a citation names the one it quoted);
    /// absent: the one search reads.
    #[param(minimum = 1)]
    pub revision: Option<i32>,
}

/// The revision to read of `doc`: the one asked for, which must exist
/// and still be kept, or the one it shows.
pub(crate) async fn readable_revision(
    state: &AppState,
    doc: &documents::DocumentRow,
    asked: Option<i32>,
) -> Result<(i32, Option<i32>), ApiError> {
    let revisions = rag_store::raw::Revisions { searchable: doc.revision, latest: doc.latest_revision };
    let revision = match asked {
        None => revisions.shown(),
        Some(r) if r < 1 || r > doc.latest_revision => {
            return Err(ApiError::not_found("revision"));
        }
        Some(r) => {
            if !rag_store::raw::has_revision(state.pool(), &doc.workspace_id, doc.id, r).await? && Some(r) != doc.revision {
                return Err(ApiError::new(
                    StatusCode::GONE,
                    "revision_removed",
                    format!("revision {r} of this document is no longer kept (it is not parsed, failed, or was removed)"),
                ));
            }
            r
        }
    };
    let newer = doc.revision.filter(|&searchable| searchable > revision);
    Ok((revision, newer))
}

/// The segments of `revision` of `doc`, or why it has none to read (409
/// `document_failed`, `not_parsed`). A revision whose text is there is
/// shown whatever the newest one's status (a change on its way, or
/// failed, leaves the earlier readable).
pub(crate) async fn readable_segments(
    state: &AppState,
    doc: &documents::DocumentRow,
    revision: i32,
) -> Result<Vec<rag_store::raw::SegmentRow>, ApiError> {
    let segments = rag_store::raw::segments(state.pool(), &doc.workspace_id, doc.id, Some(revision)).await?;
    if segments.is_empty() {
        match doc.status {
            DocumentStatus::Failed => {
                return Err(ApiError::conflict(
                    "document_failed",
                    format!("the document failed: {}", doc.failure_reason.as_deref().unwrap_or("unknown reason")),
                ))
            }
            DocumentStatus::Parsed | DocumentStatus::Chunked | DocumentStatus::Ingested => {}
            other => return Err(ApiError::conflict("not_parsed", format!("the document is not parsed yet (status {other})"))),
        }
    }
    Ok(segments)
}

/// The raw-text viewer (seed 000): the document's segments, which tile its
/// full text; citations' character ranges index that text. `?revision=`
/// reads an earlier revision (what an earlier answer quoted). 409 while the
/// document is not parsed yet (or failed).
#[utoipa::path(get, path = "/v1/workspaces/{ws}/documents/{id}/raw-text", tag = "documents",
    params(("ws" = String, Path, description = "Workspace id"), ("id" = Uuid, Path, description = "Document id"), RevisionQuery),
    responses((status = 200, body = RawText), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 410, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn raw_text(
    State(state): State<AppState>,
    user: AuthUser,
    Path((ws, id)): Path<(String, Uuid)>,
    Query(query): Query<RevisionQuery>,
) -> Result<([(axum::http::HeaderName, &'static str); 1], Json<RawText>), ApiError> {
    let doc = owned_document(&state, &user, &ws, id).await?;
    let (revision, newer_revision) = readable_revision(&state, &doc, query.revision).await?;
    let segments = readable_segments(&state, &doc, revision).await?;
    let pages = rag_store::raw::pages(state.pool(), &ws, id, Some(revision)).await?;
    // A user's document text: never kept by a shared cache or the browser's.
    Ok((
        [(axum::http::header::CACHE_CONTROL, "no-store")],
        Json(RawText {
            document_id: id,
            workspace_id: ws,
            status: doc.status,
            pages: pages.into_iter().map(Into::into).collect(),
            segments: segments.into_iter().map(Into::into).collect(),
            revision,
            newer_revision,
        }),
    ))
}
