//! `docs show --page N [--highlight S-E]`: a PDF page (or an image's page)
//! as a PNG with a cited span's boxes drawn, so a reader sees where on the
//! page the text is.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use rag_docparse::segments::{span_geometry, SpanGeometry};
use rag_docparse::{PageSize, Rect};
use rag_store::documents::DocumentRow;
use serde::Serialize;

use rag_app::config::BlobSettings;

#[derive(Debug, Serialize)]
pub struct PagePng {
    pub png: String,
    pub page: PageSize,
    /// Geometry of the whole highlighted span (all pages).
    pub span: SpanGeometry,
    /// The boxes drawn: the span's boxes on this page.
    pub drawn: Vec<Rect>,
}

pub async fn write(
    s: &BlobSettings,
    pool: &rag_store::sqlx::PgPool,
    d: &DocumentRow,
    page: u32,
    highlight: Option<(u64, u64)>,
    dpi: u32,
    out: &Path,
) -> anyhow::Result<PagePng> {
    let pages = rag_store::raw::pages(pool, &d.workspace_id, d.id, None).await?;
    if pages.is_empty() {
        anyhow::bail!(
            "document {} has no page geometry (status {}; only PDFs, images and Document AI files have pages, and documents parsed before parser 3 need a re-parse)",
            d.id,
            d.status
        );
    }
    let idx = page.checked_sub(1).context("pages count from 1")?;
    let size = pages
        .iter()
        .find(|p| p.page_idx == idx)
        .cloned()
        .with_context(|| format!("page {page} does not exist (the document has {})", pages.len()))?;
    let is_image = rag_docparse::detect_format(d.content_type.as_deref().unwrap_or(""), d.filename.as_deref().unwrap_or(""))
        .is_some_and(|f| f.is_image());
    if size.unit != "pt" && !(is_image && size.unit == "px") {
        anyhow::bail!("page {page} is in {} (Document AI): there is no PDF to render", size.unit);
    }
    let span = match highlight {
        Some((a, b)) => span_geometry(&rag_store::raw::span_segments(pool, &d.workspace_id, d.id, None, a, b).await?, a, b),
        None => Default::default(),
    };
    if highlight.is_some() && span.boxes.is_empty() {
        anyhow::bail!("characters {:?} have no boxes (outside the text, or only whitespace)", highlight.unwrap_or_default());
    }
    let drawn: Vec<Rect> = span.boxes.iter().filter(|b| b.page_idx == idx).map(|b| b.rect).collect();
    let uri = d.blob_uri.as_deref().context("the document has no original blob")?;
    let blobs = rag_blobs::BlobStore::new(&s.blobs());
    let original = blobs.get(blobs.key_of(uri)?).await.with_context(|| format!("reading the original {uri}"))?;
    let png = if is_image {
        // An image is shown itself: `dpi` does not apply.
        let (page, boxes) = (size.clone(), drawn.clone());
        tokio::task::spawn_blocking(move || rag_pageimage::image_page_png(&original, &page, &boxes)).await??
    } else {
        rag_pageimage::highlighted_png(&original, &size, &drawn, dpi, Duration::from_secs(60)).await?
    };
    std::fs::write(out, png).with_context(|| format!("writing {}", out.display()))?;
    Ok(PagePng { png: out.display().to_string(), page: size, span, drawn })
}
