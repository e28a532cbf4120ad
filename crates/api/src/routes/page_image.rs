//! A page of a PDF, or of an image, as a PNG with a cited span's boxes
//! drawn on it: what the web page shows beside the raw text when a citation
//! of a PDF or an image opens.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use rag_pageimage::PageImageError;
use serde::Deserialize;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::routes::documents::owned_document;
use crate::AppState;

/// Resolution of the rendered page: sharp on a laptop screen, about
/// 100-200 KB per page.
const DPI: u32 = 110;
const RENDER_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct PageImageQuery {
    /// Characters `START-END` of the full text to highlight (a citation's
    /// `char_start-char_end`); its boxes on this page are drawn.
    pub highlight: Option<String>,
    /// The document revision to draw (a citation names the one it quoted);
    /// absent: the one search reads.
    #[param(minimum = 1)]
    pub revision: Option<i32>,
}

fn parse_span(s: &str) -> Option<(u64, u64)> {
    let (a, b) = s.split_once('-')?;
    let (a, b): (u64, u64) = (a.parse().ok()?, b.parse().ok()?);
    (a < b).then_some((a, b))
}

/// A turn to decode an image: one of the API's [`crate::IMAGE_RENDERS`]
/// permits, waited for at most `wait`; then 503 `renderer_busy`.
async fn render_turn(renders: &Arc<Semaphore>, wait: Duration) -> Result<OwnedSemaphorePermit, ApiError> {
    match tokio::time::timeout(wait, renders.clone().acquire_owned()).await {
        Ok(Ok(permit)) => Ok(permit),
        Ok(Err(e)) => Err(ApiError::internal(format!("image renders: {e}"))),
        Err(_) => Err(ApiError {
            retry_after: Some(Duration::from_secs(5)),
            ..ApiError::unavailable("renderer_busy", "too many page images are being drawn: try again")
        }),
    }
}

/// Page `page` (1-based) of a PDF or image document as a PNG, the boxes of
/// the `highlight` span drawn on it. A PDF page is rendered at 110 dpi; an
/// image (PNG, JPEG, TIFF page, WebP) is shown itself, turned as its EXIF
/// says and converted to PNG, its long side at most 4,000 pixels (two
/// images are drawn at once; 503 `renderer_busy` after 30 s waiting for
/// a turn). 409 for documents without such pages.
#[utoipa::path(get, path = "/v1/workspaces/{ws}/documents/{id}/pages/{page}/image", tag = "documents",
    params(("ws" = String, Path, description = "Workspace id"), ("id" = Uuid, Path, description = "Document id"),
           ("page" = u32, Path, description = "Page, from 1"), PageImageQuery),
    responses((status = 200, content_type = "image/png", body = Vec<u8>), (status = 400, body = crate::error::ErrorBody),
              (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
              (status = 409, body = crate::error::ErrorBody), (status = 503, body = crate::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn page_image(
    State(state): State<AppState>,
    user: AuthUser,
    Path((ws, id, page)): Path<(String, Uuid, u32)>,
    Query(q): Query<PageImageQuery>,
) -> Result<Response, ApiError> {
    let doc = owned_document(&state, &user, &ws, id).await?;
    let highlight = match q.highlight.as_deref() {
        None | Some("") => None,
        Some(s) => {
            Some(parse_span(s).ok_or_else(|| ApiError::bad_request("invalid_highlight", format!("highlight {s:?} is not START-END")))?)
        }
    };
    let (revision, _) = super::documents::readable_revision(&state, &doc, q.revision).await?;
    let pages = rag_store::raw::pages(state.pool(), &ws, id, Some(revision)).await?;
    let is_image = rag_docparse::detect_format(doc.content_type.as_deref().unwrap_or(""), doc.filename.as_deref().unwrap_or(""))
        .is_some_and(|f| f.is_image());
    let size = match pages.iter().find(|p| Some(p.page_idx) == page.checked_sub(1)) {
        Some(p) if p.unit == "pt" || (is_image && p.unit == "px") => p.clone(),
        Some(_) => {
            return Err(ApiError::conflict("no_page_image", "the document's pages come from Document AI: there is no PDF to render"))
        }
        None if pages.is_empty() => {
            return Err(ApiError::conflict("no_page_image", "the document has no PDF or image pages (or is not parsed yet)"))
        }
        None => return Err(ApiError::not_found("page")),
    };
    let boxes = match highlight {
        Some((a, b)) => {
            let segments = rag_store::raw::span_segments(state.pool(), &ws, id, Some(revision), a, b).await?;
            rag_docparse::geometry::span_boxes(segments.iter().flat_map(|s| &s.boxes), a, b)
        }
        None => Vec::new(),
    };
    let drawn: Vec<rag_docparse::Rect> = boxes.iter().filter(|b| b.page_idx == size.page_idx).map(|b| b.rect).collect();
    let original = match rag_store::raw::revision_original(state.pool(), &ws, id, revision).await? {
        Some(uri) => Some(uri),
        None => doc.blob_uri.clone(),
    };
    let uri = original.as_deref().ok_or_else(|| ApiError::conflict("no_page_image", "the document has no original"))?;
    let blobs = state.blobs();
    let png = if is_image {
        // An image is decoded whole in this process: a few at once
        // (IMAGE_RENDERS), the others wait, so no number of requests holds
        // more pictures in memory. The permit is taken before the original
        // is fetched, and goes with the decoding: a request given up by its
        // client still holds it until its decoding ends.
        let permit = render_turn(state.image_renders(), RENDER_TIMEOUT).await?;
        let original = blobs.get(blobs.key_of(uri)?).await?;
        // Decoding is CPU work: off the async workers.
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            rag_pageimage::image_page_png(&original, &size, &drawn)
        })
        .await
        .map_err(|e| ApiError::internal(format!("drawing the image: {e}")))?
    } else {
        let original = blobs.get(blobs.key_of(uri)?).await?;
        rag_pageimage::highlighted_png(&original, &size, &drawn, DPI, RENDER_TIMEOUT).await
    }
    .map_err(|e| match e {
        PageImageError::NoRenderer | PageImageError::Timeout(_) => ApiError::unavailable("renderer_unavailable", e.to_string()),
        other => ApiError::internal(other.to_string()),
    })?;
    // Private: the page belongs to one workspace.
    Ok(([(header::CONTENT_TYPE, "image/png"), (header::CACHE_CONTROL, "private, max-age=300")], png).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn images_wait_for_one_of_the_render_turns_and_then_are_told_busy() {
        let renders = Arc::new(Semaphore::new(crate::IMAGE_RENDERS));
        let wait = Duration::from_millis(50);
        let first = render_turn(&renders, wait).await.unwrap();
        let _second = render_turn(&renders, wait).await.unwrap();
        let busy = render_turn(&renders, wait).await.unwrap_err();
        assert_eq!((busy.status, busy.code), (axum::http::StatusCode::SERVICE_UNAVAILABLE, "renderer_busy"));
        assert_eq!(busy.retry_after, Some(Duration::from_secs(5)));
        // A turn given back (its decoding ended) is the next one's.
        let waiting = tokio::spawn({
            let renders = renders.clone();
            async move { render_turn(&renders, Duration::from_secs(10)).await.is_ok() }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(first);
        assert!(waiting.await.unwrap());
    }
}
