//! The raw viewer's read side: a document's segments (text, line range and
//! line fragments, as stored), its pages, its chunk mappings, and the
//! segments of a cited span. Everything is read within one workspace.
//!
//! Only stored data comes out of here. Where a span is on the page (its
//! boxes, lines and cells) is the parser's rule (`rag_docparse::segments`,
//! `rag_docparse::geometry`), applied by the caller to what it reads: the
//! segments of a cited span ([`span_segments`]), or a document's line
//! fragments ([`segments`]) for a chunk mapping's characters.

use rag_model::{CellRange, LineFragment, PageSize, Segment};
use serde::Serialize;
use sqlx::types::Json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::StoreError;

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct SegmentRow {
    pub segment_index: i32,
    pub page_idx: i32,
    pub char_start: i64,
    pub char_end: i64,
    pub text: String,
    pub line_start: Option<i32>,
    pub line_end: Option<i32>,
    pub boxes: Json<Vec<LineFragment>>,
    /// A spreadsheet row's sheet and cells; None for other formats.
    pub cells: Option<Json<CellRange>>,
}

impl From<SegmentRow> for Segment {
    fn from(r: SegmentRow) -> Segment {
        Segment {
            segment_index: r.segment_index as u32,
            page_idx: r.page_idx as u32,
            char_start: r.char_start as u64,
            char_end: r.char_end as u64,
            text: r.text,
            line_start: r.line_start.map(|l| l as u32),
            line_end: r.line_end.map(|l| l as u32),
            boxes: r.boxes.0,
            cells: r.cells.map(|c| c.0),
            // Not kept in the read model: only the chunker reads it, from
            // the parsed segments.
            slide: false,
        }
    }
}

const SEGMENT_COLUMNS: &str = "segment_index, page_idx, char_start, char_end, text, line_start, line_end, boxes, cells";

/// SQL: the revision to read, `$3` when given, else the one the document
/// shows (the revision search reads, or before any is ingested the newest).
const REVISION: &str = "COALESCE($3::int, (SELECT COALESCE(d.revision, d.latest_revision) FROM documents d
                                           WHERE d.id = $2 AND d.workspace_id = $1))";

/// A document's segments in order, only within its workspace: of
/// `revision`, or of the revision the document shows when None.
pub async fn segments(pool: &PgPool, workspace_id: &str, document_id: Uuid, revision: Option<i32>) -> Result<Vec<SegmentRow>, StoreError> {
    Ok(sqlx::query_as(&format!(
        "SELECT {SEGMENT_COLUMNS} FROM segments WHERE workspace_id = $1 AND document_id = $2 AND revision = {REVISION}
         ORDER BY segment_index"
    ))
    .bind(workspace_id)
    .bind(document_id)
    .bind(revision)
    .fetch_all(pool)
    .await?)
}

/// A document's full raw text (its segments joined, which tile it), as
/// characters, the unit citation offsets count in; None when it has no
/// segments (not parsed, failed, or deleted).
pub async fn full_text(
    pool: &PgPool,
    workspace_id: &str,
    document_id: Uuid,
    revision: Option<i32>,
) -> Result<Option<Vec<char>>, StoreError> {
    let segments = segments(pool, workspace_id, document_id, revision).await?;
    Ok((!segments.is_empty()).then(|| segments.iter().flat_map(|s| s.text.chars()).collect()))
}

/// The raw text at characters `[start, end)` of a document's `revision`
/// (None: the one it shows), read from the few segments that overlap the
/// range: a search hit in a long PDF reads its passage, not the whole text
/// with every line's boxes ([`full_text`]). None when the range is empty
/// or not all there (not parsed, failed, deleted, or past the end).
pub async fn span_text(
    pool: &PgPool,
    workspace_id: &str,
    document_id: Uuid,
    revision: Option<i32>,
    start: u64,
    end: u64,
) -> Result<Option<String>, StoreError> {
    if start >= end {
        return Ok(None);
    }
    let rows: Vec<(i64, String)> = overlapping(pool, "char_start, text", workspace_id, document_id, revision, start, end).await?;
    Ok(slice_of_segments(&rows, start, end))
}

/// `columns` of the segments of a document's `revision` (None: the one it
/// shows) that overlap the characters `[start, end)`, in order: the one
/// query behind [`span_text`] and [`span_segments`].
async fn overlapping<T>(
    pool: &PgPool,
    columns: &str,
    workspace_id: &str,
    document_id: Uuid,
    revision: Option<i32>,
    start: u64,
    end: u64,
) -> Result<Vec<T>, StoreError>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
{
    Ok(sqlx::query_as(&format!(
        "SELECT {columns} FROM segments
         WHERE workspace_id = $1 AND document_id = $2 AND revision = {REVISION} AND char_start < $5 AND char_end > $4
         ORDER BY segment_index"
    ))
    .bind(workspace_id)
    .bind(document_id)
    .bind(revision)
    .bind(start as i64)
    .bind(end as i64)
    .fetch_all(pool)
    .await?)
}

/// Characters `[start, end)` of consecutive segments given as (their first
/// character's offset, their text); None when the segments leave a gap or
/// do not cover the range.
fn slice_of_segments(segments: &[(i64, String)], start: u64, end: u64) -> Option<String> {
    let mut pos = u64::try_from(segments.first()?.0).ok()?;
    if pos > start {
        return None;
    }
    let mut out = String::new();
    for (char_start, text) in segments {
        if u64::try_from(*char_start).ok()? != pos {
            return None;
        }
        for ch in text.chars() {
            if pos >= end {
                break;
            }
            if pos >= start {
                out.push(ch);
            }
            pos += 1;
        }
        if pos >= end {
            break;
        }
    }
    (pos >= end).then_some(out)
}

/// Each page's size as displayed (the frame of the boxes); empty for
/// formats without pages or documents parsed before geometry existed.
pub async fn pages(pool: &PgPool, workspace_id: &str, document_id: Uuid, revision: Option<i32>) -> Result<Vec<PageSize>, StoreError> {
    let pages: Option<Json<Vec<PageSize>>> = sqlx::query_scalar(&format!(
        "SELECT pages FROM document_revisions WHERE workspace_id = $1 AND document_id = $2 AND revision = {REVISION}"
    ))
    .bind(workspace_id)
    .bind(document_id)
    .bind(revision)
    .fetch_optional(pool)
    .await?;
    Ok(pages.map(|p| p.0).unwrap_or_default())
}

/// Which revisions a document has and which one it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, sqlx::FromRow)]
pub struct Revisions {
    /// The revision search reads; None before the first is ingested.
    pub searchable: Option<i32>,
    /// The newest revision uploaded (perhaps still on its way).
    pub latest: i32,
}

impl Revisions {
    /// The revision shown when none is asked for.
    pub fn shown(self) -> i32 {
        self.searchable.unwrap_or(self.latest)
    }
}

/// A document's revisions, only within its workspace.
pub async fn revisions(pool: &PgPool, workspace_id: &str, document_id: Uuid) -> Result<Option<Revisions>, StoreError> {
    Ok(sqlx::query_as("SELECT revision AS searchable, latest_revision AS latest FROM documents WHERE workspace_id = $1 AND id = $2")
        .bind(workspace_id)
        .bind(document_id)
        .fetch_optional(pool)
        .await?)
}

/// Where the original bytes of a document's `revision` are stored.
pub async fn revision_original(pool: &PgPool, workspace_id: &str, document_id: Uuid, revision: i32) -> Result<Option<String>, StoreError> {
    Ok(sqlx::query_scalar("SELECT blob_uri FROM document_revisions WHERE workspace_id = $1 AND document_id = $2 AND revision = $3")
        .bind(workspace_id)
        .bind(document_id)
        .bind(revision)
        .fetch_optional(pool)
        .await?
        .flatten())
}

/// Whether the document still has the segments of `revision` (a
/// superseded revision is kept while retention says so).
pub async fn has_revision(pool: &PgPool, workspace_id: &str, document_id: Uuid, revision: i32) -> Result<bool, StoreError> {
    Ok(sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM segments WHERE workspace_id = $1 AND document_id = $2 AND revision = $3)")
        .bind(workspace_id)
        .bind(document_id)
        .bind(revision)
        .fetch_one(pool)
        .await?)
}

/// The stored segments that overlap the characters `[start, end)` of a
/// document's `revision` (None: the one it shows), in order: what the
/// span's boxes, lines and cells are computed from (by the parser's rule in
/// `rag_docparse::segments`: the answerer for a citation, the API and the
/// CLI for a highlighted page).
pub async fn span_segments(
    pool: &PgPool,
    workspace_id: &str,
    document_id: Uuid,
    revision: Option<i32>,
    start: u64,
    end: u64,
) -> Result<Vec<Segment>, StoreError> {
    let rows: Vec<SegmentRow> = overlapping(pool, SEGMENT_COLUMNS, workspace_id, document_id, revision, start, end).await?;
    Ok(rows.into_iter().map(Segment::from).collect())
}

#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct ChunkMappingRow {
    pub chunk_id: String,
    pub chunking_version: String,
    pub chunk_index: i32,
    pub page_start: i32,
    pub page_end: i32,
    pub segment_start_index: i32,
    pub segment_end_index: i32,
    pub char_start: i64,
    pub char_end: i64,
    pub line_start: Option<i32>,
    pub line_end: Option<i32>,
}

/// A document's chunk mappings (every chunking version it has), as stored.
/// Where a chunk is on its pages is the caller's to compute (the boxes of
/// its characters, `rag_docparse::geometry`, over the line fragments of
/// the document's [`segments`]).
pub async fn chunk_mappings(pool: &PgPool, workspace_id: &str, document_id: Uuid) -> Result<Vec<ChunkMappingRow>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT chunk_id, chunking_version, chunk_index, page_start, page_end, segment_start_index,
                segment_end_index, char_start, char_end, line_start, line_end
         FROM chunk_mappings WHERE workspace_id = $1 AND document_id = $2 ORDER BY chunking_version, chunk_index",
    )
    .bind(workspace_id)
    .bind(document_id)
    .fetch_all(pool)
    .await?)
}

/// The file a document's `revision` was uploaded as: its name, its content
/// type and where its original is stored (a replacement may change the
/// format, so what the revision is read as comes from here, not from the
/// document's newest upload). None for a revision with no row (a document
/// uploaded before revisions were kept: its one revision is the document).
pub async fn revision_file(
    pool: &PgPool,
    workspace_id: &str,
    document_id: Uuid,
    revision: i32,
) -> Result<Option<RevisionFile>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT filename, content_type, blob_uri FROM document_revisions WHERE workspace_id = $1 AND document_id = $2 AND revision = $3",
    )
    .bind(workspace_id)
    .bind(document_id)
    .bind(revision)
    .fetch_optional(pool)
    .await?)
}

/// See `revision_file`.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RevisionFile {
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub blob_uri: Option<String>,
}

#[cfg(test)]
mod span_tests {
    use super::slice_of_segments;

    #[test]
    fn a_span_is_cut_from_the_segments_it_overlaps() {
        let segs = vec![(10, "Hồ sơ ".to_string()), (16, "nhân sự".to_string())];
        assert_eq!(slice_of_segments(&segs, 10, 23).as_deref(), Some("Hồ sơ nhân sự"));
        assert_eq!(slice_of_segments(&segs, 13, 19).as_deref(), Some("sơ nhâ"));
        assert_eq!(slice_of_segments(&segs, 16, 17).as_deref(), Some("n"));
        // Past the end, before the first segment, or across a gap: not all there.
        assert_eq!(slice_of_segments(&segs, 20, 24), None);
        assert_eq!(slice_of_segments(&segs, 9, 12), None);
        assert_eq!(slice_of_segments(&[(0, "ab".to_string()), (3, "cd".to_string())], 1, 4), None);
        assert_eq!(slice_of_segments(&[], 0, 1), None);
    }
}
