//! The reading view (docs/web.md, "A document from the list"): a Markdown
//! or HTML document as its author structured it, each text saying where
//! it is in the raw text so the page marks a citation inside it.

use axum::extract::{Path, Query, State};
use axum::Json;
use rag_docparse::Format;
use uuid::Uuid;

use super::documents::{owned_document, readable_revision, readable_segments, RevisionQuery};
use crate::auth::AuthUser;
use crate::error::{ApiError, ErrorBody};
use crate::model::{ReadingFormat, ReadingView};
use crate::AppState;

/// The largest raw text (and HTML original) drawn as a reading view, in
/// bytes: past it the view would be tens of megabytes of JSON and seconds
/// of work per request, and the page shows the raw text instead (409
/// `too_large_to_format`).
pub const MAX_READING_BYTES: usize = 2 * 1024 * 1024;

fn too_large(bytes: usize) -> ApiError {
    ApiError::conflict(
        "too_large_to_format",
        format!("the document is too large to show formatted ({bytes} bytes, at most {MAX_READING_BYTES}); its raw text shows it"),
    )
}

/// A Markdown or HTML document's reading view: its headings, lists,
/// emphasis, links and tables as a tree of whitelisted elements (`tag`,
/// `href` for http(s) and mailto links only, `start` of an ordered list,
/// `children`) and texts (`text`, and `at`: where the text starts in the
/// raw text, in Unicode scalar values, its characters the raw text's one
/// for one). Nothing of the document is run or fetched by drawing it.
/// 409 `no_reading_view` for other formats (their raw text is their
/// view; the format is the one of the revision read),
/// `too_large_to_format` past `MAX_READING_BYTES`, and as the raw text
/// for a document not parsed yet or failed.
#[utoipa::path(get, path = "/v1/workspaces/{ws}/documents/{id}/reading", tag = "documents",
    params(("ws" = String, Path, description = "Workspace id"), ("id" = Uuid, Path, description = "Document id"), RevisionQuery),
    responses((status = 200, body = ReadingView), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 410, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn reading(
    State(state): State<AppState>,
    user: AuthUser,
    Path((ws, id)): Path<(String, Uuid)>,
    Query(query): Query<RevisionQuery>,
) -> Result<([(axum::http::HeaderName, &'static str); 1], Json<ReadingView>), ApiError> {
    let doc = owned_document(&state, &user, &ws, id).await?;
    let (revision, _) = readable_revision(&state, &doc, query.revision).await?;
    // What this revision was uploaded as: a replacement may have changed
    // the format (a PDF replaced by a web page), and a citation may quote
    // the earlier one.
    let file = rag_store::raw::revision_file(state.pool(), &ws, id, revision).await?.unwrap_or(rag_store::raw::RevisionFile {
        filename: doc.filename.clone(),
        content_type: doc.content_type.clone(),
        blob_uri: doc.blob_uri.clone(),
    });
    let format = match rag_docparse::detect_format(file.content_type.as_deref().unwrap_or(""), file.filename.as_deref().unwrap_or("")) {
        Some(Format::Markdown) => ReadingFormat::Markdown,
        Some(Format::Html) => ReadingFormat::Html,
        _ => {
            return Err(ApiError::conflict(
                "no_reading_view",
                "only Markdown and HTML documents have a reading view; the raw text is this document's",
            ))
        }
    };
    let segments = readable_segments(&state, &doc, revision).await?;
    // Segments tile the raw text: their texts, in order, are all of it.
    let raw: String = segments.iter().map(|s| s.text.as_str()).collect();
    if raw.len() > MAX_READING_BYTES {
        return Err(too_large(raw.len()));
    }
    // Two views drawn at a time per process (they are CPU and memory: a
    // large page's view is several times its text); the others wait.
    let _turn = state.reading_turn().acquire().await.map_err(|_| ApiError::internal("the reading views' turn is closed"))?;
    let blocks = match format {
        ReadingFormat::Markdown => tokio::task::spawn_blocking(move || rag_reading::markdown(&raw)).await,
        ReadingFormat::Html => {
            let uri = file.blob_uri.ok_or_else(|| ApiError::conflict("no_reading_view", "the document has no original"))?;
            let blobs = state.blobs();
            let original = blobs.get(blobs.key_of(&uri)?).await?;
            if original.len() > MAX_READING_BYTES {
                return Err(too_large(original.len()));
            }
            let source = String::from_utf8_lossy(original.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&original)).into_owned();
            let depth = rag_reading::tag_depth(&source);
            if depth > rag_reading::MAX_HTML_DEPTH {
                return Err(ApiError::conflict(
                    "too_large_to_format",
                    format!(
                        "the page nests {depth} elements deep (at most {} are shown formatted); its raw text shows it",
                        rag_reading::MAX_HTML_DEPTH
                    ),
                ));
            }
            // As the parser reads it: UTF-8, a byte-order mark dropped (above).
            tokio::task::spawn_blocking(move || rag_reading::html(&source, &raw)).await
        }
    }
    .map_err(|e| ApiError::internal(format!("drawing the reading view: {e}")))?;
    // A user's document text: never kept by a shared cache or the browser's.
    Ok(([(axum::http::header::CACHE_CONTROL, "no-store")], Json(ReadingView { document_id: id, revision, format, blocks })))
}
