//! A PDF page, or an image's page, as a PNG with the boxes of a citation
//! drawn on it.
//!
//! poppler's `pdftoppm` (Debian poppler-utils, installed by `scripts/stack`
//! and used for OCR already) renders the page as displayed, its rotation
//! applied, which is the frame the boxes are in ([`rag_docparse::geometry`]).
//! An image (PNG, JPEG, TIFF, WebP) is decoded in process and turned as its
//! EXIF says, as the parser read it ([`image_page_png`]), so browsers see a
//! PNG whatever the original's format. Drawing and encoding are pure
//! ([`highlight`], [`Image::to_png`]); only [`render_page`] runs a process.

use std::path::PathBuf;
use std::time::Duration;

use rag_docparse::{PageSize, Rect};

#[derive(Debug, thiserror::Error)]
pub enum PageImageError {
    #[error("pdftoppm is not installed (Debian: poppler-utils)")]
    NoRenderer,
    #[error("rendering the page failed: {0}")]
    Render(String),
    #[error("rendering the page took longer than {0:?}")]
    Timeout(Duration),
    #[error("page {page} does not exist (the document has {count})")]
    NoSuchPage { page: u32, count: usize },
    #[error("PNG encoding: {0}")]
    Encode(String),
    #[error("reading the image: {0}")]
    Decode(String),
}

/// An 8-bit RGB image.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    pub width: usize,
    pub height: usize,
    pub rgb: Vec<u8>,
}

impl Image {
    /// A binary PPM (P6, maxval 255), what pdftoppm writes.
    pub fn from_ppm(data: &[u8]) -> Result<Image, PageImageError> {
        let bad = |why: &str| PageImageError::Render(format!("unreadable PPM: {why}"));
        let mut fields = Vec::new();
        let mut at = 0;
        while fields.len() < 4 {
            while at < data.len() && data[at].is_ascii_whitespace() {
                at += 1;
            }
            let start = at;
            while at < data.len() && !data[at].is_ascii_whitespace() {
                at += 1;
            }
            if start == at {
                return Err(bad("short header"));
            }
            fields.push(String::from_utf8_lossy(&data[start..at]).to_string());
        }
        if fields[0] != "P6" || fields[3] != "255" {
            return Err(bad("not an 8-bit P6"));
        }
        let (width, height): (usize, usize) = match (fields[1].parse(), fields[2].parse()) {
            (Ok(w), Ok(h)) => (w, h),
            _ => return Err(bad("bad size")),
        };
        let body = data.get(at + 1..at + 1 + width * height * 3).ok_or_else(|| bad("truncated"))?;
        Ok(Image { width, height, rgb: body.to_vec() })
    }

    pub fn to_png(&self) -> Result<Vec<u8>, PageImageError> {
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, self.width as u32, self.height as u32);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(|e| PageImageError::Encode(e.to_string()))?;
        writer.write_image_data(&self.rgb).map_err(|e| PageImageError::Encode(e.to_string()))?;
        writer.finish().map_err(|e| PageImageError::Encode(e.to_string()))?;
        Ok(out)
    }
}

/// Marks each box (in the page's unit) on the rendered page: a translucent
/// yellow fill like a highlighter, and an orange outline just outside the
/// box so the glyphs stay readable.
pub fn highlight(img: &mut Image, page: &PageSize, boxes: &[Rect]) {
    let (sx, sy) = (img.width as f32 / page.width.max(1e-3), img.height as f32 / page.height.max(1e-3));
    for b in boxes {
        let x0 = (b.x0 * sx).floor().max(0.0) as usize;
        let y0 = (b.y0 * sy).floor().max(0.0) as usize;
        let x1 = ((b.x1 * sx).ceil() as usize).min(img.width);
        let y1 = ((b.y1 * sy).ceil() as usize).min(img.height);
        for y in y0..y1 {
            for x in x0..x1 {
                let p = (y * img.width + x) * 3;
                // Multiply by yellow (255, 230, 0): white turns yellow, ink stays dark.
                img.rgb[p + 2] = (img.rgb[p + 2] as u16 * 40 / 255) as u8;
                img.rgb[p + 1] = (img.rgb[p + 1] as u16 * 230 / 255) as u8;
            }
        }
        let outline = |img: &mut Image, x: usize, y: usize| {
            if x < img.width && y < img.height {
                let p = (y * img.width + x) * 3;
                img.rgb[p..p + 3].copy_from_slice(&[235, 120, 0]);
            }
        };
        for t in 1..=2 {
            for x in x0.saturating_sub(t)..(x1 + t).min(img.width) {
                outline(img, x, y0.saturating_sub(t));
                outline(img, x, y1 + t - 1);
            }
            for y in y0.saturating_sub(t)..(y1 + t).min(img.height) {
                outline(img, x0.saturating_sub(t), y);
                outline(img, x1 + t - 1, y);
            }
        }
    }
}

/// Longest side of a page image, in pixels (16 Mpx, 48 MB of RGB at most):
/// a page declared 200 × 200 inches is rendered at this size, not at
/// 22,000 × 22,000 pixels.
pub const MAX_SIDE_PX: u32 = 4_000;

/// How large to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    Dpi(u32),
    /// The long side scaled to this many pixels.
    LongSide(u32),
}

impl Resolution {
    /// The long side `dpi` gives a page of `page` (in points), at most
    /// [`MAX_SIDE_PX`]. Always a pixel count, never a resolution: if
    /// poppler reads the page larger than our parser did (`/UserUnit`, a
    /// repaired file), the image is still no larger. A page whose size is
    /// not in points gets the cap itself.
    pub fn capped(page: &PageSize, dpi: u32) -> Resolution {
        let long_pt = if page.unit == "pt" { page.width.max(page.height) } else { f32::INFINITY };
        let px = (long_pt / 72.0 * dpi as f32).round();
        Resolution::LongSide(if px.is_finite() && px >= 1.0 { (px as u32).min(MAX_SIDE_PX) } else { MAX_SIDE_PX })
    }

    fn args(self) -> [String; 2] {
        match self {
            Resolution::Dpi(dpi) => ["-r".into(), dpi.to_string()],
            Resolution::LongSide(px) => ["-scale-to".into(), px.to_string()],
        }
    }
}

/// Renders zero-based page `page_idx` of `pdf` at `resolution` with
/// pdftoppm, in a private temporary directory removed afterwards, killed at
/// `timeout`.
pub async fn render_page(pdf: &[u8], page_idx: u32, resolution: Resolution, timeout: Duration) -> Result<Image, PageImageError> {
    let dir: PathBuf = std::env::temp_dir().join(format!("rag-engine-page-{}", uuid::Uuid::new_v4()));
    tokio::fs::create_dir_all(&dir).await.map_err(|e| PageImageError::Render(format!("temporary directory: {e}")))?;
    let result = async {
        tokio::fs::write(dir.join("in.pdf"), pdf).await.map_err(|e| PageImageError::Render(e.to_string()))?;
        let page = (page_idx + 1).to_string();
        let mut cmd = tokio::process::Command::new("pdftoppm");
        cmd.args(["-f", &page, "-l", &page])
            .args(resolution.args())
            .arg("-singlefile")
            .arg(dir.join("in.pdf"))
            .arg(dir.join("page"))
            .kill_on_drop(true)
            .stdin(std::process::Stdio::null());
        let out = match tokio::time::timeout(timeout, cmd.output()).await {
            Err(_) => return Err(PageImageError::Timeout(timeout)),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => return Err(PageImageError::NoRenderer),
            Ok(Err(e)) => return Err(PageImageError::Render(e.to_string())),
            Ok(Ok(out)) => out,
        };
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(PageImageError::Render(format!("pdftoppm {}: {}", out.status, err.trim().chars().take(300).collect::<String>())));
        }
        let ppm = tokio::fs::read(dir.join("page.ppm")).await.map_err(|e| PageImageError::Render(format!("pdftoppm output: {e}")))?;
        Image::from_ppm(&ppm)
    }
    .await;
    let _ = tokio::fs::remove_dir_all(&dir).await;
    result
}

/// The page's PNG with `boxes` highlighted: the whole job.
pub async fn highlighted_png(pdf: &[u8], page: &PageSize, boxes: &[Rect], dpi: u32, timeout: Duration) -> Result<Vec<u8>, PageImageError> {
    let mut img = render_page(pdf, page.page_idx, Resolution::capped(page, dpi), timeout).await?;
    highlight(&mut img, page, boxes);
    img.to_png()
}

/// Page `page` of an image document (`original`: its PNG, JPEG, TIFF or
/// WebP bytes) as a PNG with `boxes` (in its pixels) highlighted, its long
/// side at most [`MAX_SIDE_PX`]. The image is decoded only if its header
/// says it has, as displayed (its orientation applied), exactly the size
/// the parser recorded for the page (`page`, in pixels): never more pixels
/// than the parser accepted, and never a picture the boxes were not
/// measured on. The picture is
/// decoded whole (at most 4 bytes a pixel), shrunk with an integer box
/// filter, then turned: CPU and memory work, so call it off the async
/// workers and only a few at once (the API allows two).
pub fn image_page_png(original: &[u8], page: &PageSize, boxes: &[Rect]) -> Result<Vec<u8>, PageImageError> {
    let limits = rag_docparse::Limits {
        max_image_pixels: (page.width.max(0.0) as u64).saturating_mul(page.height.max(0.0) as u64),
        ..rag_docparse::Limits::default()
    };
    let expected = (page.width.max(0.0).round() as u32, page.height.max(0.0).round() as u32);
    let rgb = rag_docparse::raster::page_rgb(original, page.page_idx, &limits, MAX_SIDE_PX, Some(expected))
        .map_err(|e| PageImageError::Decode(e.to_string()))?;
    let mut img = Image { width: rgb.width as usize, height: rgb.height as usize, rgb: rgb.rgb };
    highlight(&mut img, page, boxes);
    img.to_png()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_highlight_tints_the_box_and_outlines_it_outside() {
        let mut img = Image { width: 20, height: 10, rgb: vec![255; 20 * 10 * 3] };
        let page = PageSize { page_idx: 0, width: 10.0, height: 5.0, unit: "pt".into() };
        // 2 px per point: the box (2,1)-(5,3) covers pixels x 4..10, y 2..6.
        highlight(&mut img, &page, &[Rect { x0: 2.0, y0: 1.0, x1: 5.0, y1: 3.0 }]);
        let px = |x: usize, y: usize| &img.rgb[(y * 20 + x) * 3..(y * 20 + x) * 3 + 3];
        assert_eq!(px(5, 3), &[255, 230, 40], "inside: highlighter yellow");
        assert_eq!(px(3, 3), &[235, 120, 0], "just left of it: the outline");
        assert_eq!(px(15, 8), &[255, 255, 255], "elsewhere untouched");
        let png = img.to_png().unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    }

    #[test]
    fn huge_pages_are_rendered_at_a_bounded_size() {
        let letter = PageSize { page_idx: 0, width: 612.0, height: 792.0, unit: "pt".into() };
        assert_eq!(Resolution::capped(&letter, 110), Resolution::LongSide(1210));
        let huge = PageSize { page_idx: 0, width: 14_400.0, height: 14_400.0, unit: "pt".into() };
        assert_eq!(Resolution::capped(&huge, 110), Resolution::LongSide(MAX_SIDE_PX));
        let unknown = PageSize { page_idx: 0, width: 1.0, height: 1.0, unit: "normalized".into() };
        assert_eq!(Resolution::capped(&unknown, 110), Resolution::LongSide(MAX_SIDE_PX));
    }

    #[test]
    fn an_image_page_is_drawn_on_the_image_itself_scaled_to_the_bound() {
        // 5000 × 100 grey: scaled to 4000 × 80; a box in the image's pixels
        // lands on the same place of the smaller picture.
        let grey = vec![200u8; 5000 * 100];
        let mut png = Vec::new();
        let mut enc = png::Encoder::new(&mut png, 5000, 100);
        enc.set_color(png::ColorType::Grayscale);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().unwrap();
        w.write_image_data(&grey).unwrap();
        w.finish().unwrap();
        let page = PageSize { page_idx: 0, width: 5000.0, height: 100.0, unit: "px".into() };
        let out = image_page_png(&png, &page, &[Rect { x0: 1000.0, y0: 20.0, x1: 2000.0, y1: 60.0 }]).unwrap();
        let dec = png::Decoder::new(std::io::Cursor::new(out));
        let mut reader = dec.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height, info.color_type), (4000, 80, png::ColorType::Rgb));
        let px = |x: usize, y: usize| &buf[(y * 4000 + x) * 3..(y * 4000 + x) * 3 + 3];
        assert_eq!(px(1200, 40), &[200, 180, 31], "inside the box: tinted");
        assert_eq!(px(100, 40), &[200, 200, 200], "elsewhere: the image");
        // A page the parser recorded smaller than the image is: not decoded,
        // over the pixel limit its size makes.
        let small = PageSize { page_idx: 0, width: 50.0, height: 100.0, unit: "px".into() };
        match image_page_png(&png, &small, &[]) {
            Err(PageImageError::Decode(why)) => assert!(why.contains("5000 × 100 pixels, over the limit of 5000 pixels"), "{why}"),
            other => panic!("{other:?}"),
        }
        // Nor one recorded larger, or of another shape.
        let other = PageSize { page_idx: 0, width: 2500.0, height: 200.0, unit: "px".into() };
        match image_page_png(&png, &other, &[]) {
            Err(PageImageError::Decode(why)) => assert!(why.contains("not the 2500 × 200 it was parsed as"), "{why}"),
            other => panic!("{other:?}"),
        }
        // And no such page.
        let second = PageSize { page_idx: 1, ..page };
        assert!(matches!(image_page_png(&png, &second, &[]), Err(PageImageError::Decode(_))));
    }

    #[test]
    fn ppm_headers_are_checked() {
        let ok = Image::from_ppm(b"P6\n2 1\n255\n\x01\x02\x03\x04\x05\x06").unwrap();
        assert_eq!((ok.width, ok.height, ok.rgb.len()), (2, 1, 6));
        assert!(Image::from_ppm(b"P5\n2 1\n255\n\x01\x02").is_err());
        assert!(Image::from_ppm(b"P6\n2 2\n255\n\x01").is_err());
    }
}
