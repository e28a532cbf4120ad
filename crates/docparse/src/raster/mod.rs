//! Images: PNG, JPEG, TIFF (every page of a multi-page TIFF) and WebP.
//!
//! An image has no text layer: its text comes from OCR, one page per image
//! (per TIFF page), with boxes in pixels of the image **as displayed**: its
//! EXIF (or TIFF) orientation applied before recognition, so the boxes
//! refer to the rotated image.
//!
//! Dimensions are read from the headers before any pixel is decoded: an
//! image over [`crate::Limits::max_image_pixels`] (a decompression bomb:
//! a 20,000 × 20,000 PNG is a few hundred KiB of zeros) is refused as
//! `image_too_large` without allocating its pixels. Decoding is pure
//! (image-rs); the recogniser ([`crate::PageOcr::recognize_image`]) is the
//! caller's.

use image::{DynamicImage, ImageFormat};

use crate::{Format, Limits, PageSize, ParseError};

mod header;
mod tiff;

use header::{decoding, header};
pub use header::{BYTES_PER_PIXEL, HEADER_ALLOC};
use tiff::tiff_pages;

/// Pixels of one page as recognition reads them: 8-bit grey, row by row,
/// transparency flattened onto white.
#[derive(Debug, Clone, PartialEq)]
pub struct GrayImage {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u8>,
}

impl GrayImage {
    /// A binary PGM (P5), which tesseract (leptonica) reads.
    pub fn to_pgm(&self) -> Vec<u8> {
        let mut out = format!("P5\n{} {}\n255\n", self.width, self.height).into_bytes();
        out.extend_from_slice(&self.pixels);
        out
    }
}

/// Pixels of one page for display: 8-bit RGB, row by row.
#[derive(Debug, Clone, PartialEq)]
pub struct RgbImage {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
}

/// Whether the first bytes are those of an image this parser reads.
pub fn is_image(head: &[u8]) -> bool {
    kind(head).is_some()
}

fn kind(bytes: &[u8]) -> Option<ImageFormat> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(ImageFormat::Png)
    } else if bytes.starts_with(b"\xff\xd8\xff") {
        Some(ImageFormat::Jpeg)
    } else if [b"II*\0", b"MM\0*", b"II+\0", b"MM\0+"].iter().any(|m| bytes.starts_with(*m)) {
        Some(ImageFormat::Tiff)
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some(ImageFormat::WebP)
    } else {
        None
    }
}

fn corrupt(e: impl std::fmt::Display) -> ParseError {
    ParseError::CorruptImage(e.to_string())
}

/// The format the bytes are in (judged by content: an upload is sniffed
/// at the door, and a `.jpg` that is really a PNG is read as a PNG).
fn format_of(bytes: &[u8], declared: Format) -> Result<ImageFormat, ParseError> {
    kind(bytes).ok_or_else(|| {
        let what = match declared {
            Format::Png => "PNG",
            Format::Jpeg => "JPEG",
            Format::Tiff => "TIFF",
            _ => "WebP",
        };
        ParseError::CorruptImage(format!("the file does not start like a {what} image (nor a PNG, JPEG, TIFF or WebP one)"))
    })
}

/// The pages of an image file: where each starts (TIFF) and its size as
/// displayed, in pixels. Headers only: every page is checked against the
/// pixel limit before any is decoded.
pub(crate) fn pages(format: Format, bytes: &[u8], limits: &Limits) -> Result<Vec<PageSize>, ParseError> {
    let kind = format_of(bytes, format)?;
    let ifds: Vec<Option<u64>> = match kind {
        ImageFormat::Tiff => tiff_pages(bytes, limits.max_pages)?.into_iter().map(Some).collect(),
        _ => vec![None],
    };
    if ifds.len() as u64 > u64::from(limits.max_pages) {
        return Err(ParseError::TooManyPages { pages: ifds.len() as u64, limit: limits.max_pages });
    }
    let mut sizes = Vec::with_capacity(ifds.len());
    for (page_idx, ifd) in (0u32..).zip(ifds) {
        let h = header(bytes, kind, ifd, page_idx, limits)?;
        sizes.push(PageSize { page_idx, width: h.width as f32, height: h.height as f32, unit: "px".into() });
    }
    Ok(sizes)
}

/// Page `page_idx` decoded as stored, and the orientation that turns it
/// for display (not applied yet: a caller shrinks or greys it first, so
/// the turn copies the smaller picture).
///
/// With `expected` (the page's size as displayed, as the parser recorded
/// it), a header that says otherwise is refused before any pixel is
/// decoded.
fn decode_stored(
    bytes: &[u8],
    page_idx: u32,
    limits: &Limits,
    expected: Option<(u32, u32)>,
) -> Result<(DynamicImage, image::metadata::Orientation), ParseError> {
    let kind = kind(bytes).ok_or_else(|| corrupt("not a PNG, JPEG, TIFF or WebP image"))?;
    let ifd = match kind {
        ImageFormat::Tiff => {
            // The chain up to this page only.
            let ifds = tiff_pages(bytes, page_idx)?;
            Some(*ifds.get(page_idx as usize).ok_or_else(|| corrupt(format!("the TIFF has no page {}", page_idx + 1)))?)
        }
        _ if page_idx > 0 => return Err(corrupt(format!("the image has no page {}", page_idx + 1))),
        _ => None,
    };
    let h = header(bytes, kind, ifd, page_idx, limits)?;
    if let Some((width, height)) = expected.filter(|e| *e != (h.width, h.height)) {
        return Err(corrupt(format!(
            "page {}: its header says {} × {} pixels as displayed, not the {width} × {height} it was parsed as",
            page_idx + 1,
            h.width,
            h.height
        )));
    }
    let img = DynamicImage::from_decoder(h.decoder).map_err(|e| match e {
        image::ImageError::Limits(_) => decoding(page_idx, e),
        e => corrupt(format!("page {}: {e}", page_idx + 1)),
    })?;
    Ok((img, h.orientation))
}

/// Page `page_idx` as recognition reads it: 8-bit grey, transparency
/// flattened onto white (a black text on a transparent background stays
/// black on white), its orientation applied.
///
/// Memory: the decoded picture (at most [`BYTES_PER_PIXEL`] bytes a
/// pixel) is greyed first and dropped, and only the grey picture (a byte a
/// pixel) is turned, so at most the decoded picture and two bytes a pixel
/// are held at once, then two bytes a pixel.
pub fn page_gray(bytes: &[u8], page_idx: u32, limits: &Limits) -> Result<GrayImage, ParseError> {
    let (img, orientation) = decode_stored(bytes, page_idx, limits, None)?;
    let mut turned = DynamicImage::ImageLuma8(grey_of(img)?);
    turned.apply_orientation(orientation);
    // A Luma8 image: no copy.
    let grey = turned.into_luma8();
    Ok(GrayImage { width: grey.width(), height: grey.height(), pixels: grey.into_raw() })
}

/// The picture in 8-bit grey, transparency flattened onto white in place.
fn grey_of(img: DynamicImage) -> Result<image::GrayImage, ParseError> {
    if !img.color().has_alpha() {
        return Ok(img.into_luma8());
    }
    let la = img.into_luma_alpha8();
    let (width, height) = la.dimensions();
    let mut raw = la.into_raw();
    let n = raw.len() / 2;
    // Pixel i is written where grey-alpha byte 2i was read, never ahead.
    for i in 0..n {
        raw[i] = blend_on_white(raw[2 * i], raw[2 * i + 1]);
    }
    raw.truncate(n);
    raw.shrink_to_fit();
    image::GrayImage::from_raw(width, height, raw).ok_or_else(|| corrupt("a picture of the wrong size"))
}

fn blend_on_white(v: u8, alpha: u8) -> u8 {
    let (v, a) = (u32::from(v), u32::from(alpha));
    ((v * a + 255 * (255 - a) + 127) / 255) as u8
}

/// Page `page_idx` as RGB for display, orientation applied, scaled down
/// so that its long side is at most `max_side` pixels. With `expected`
/// (its size as displayed when it was parsed), decoded only if its header
/// says exactly that size.
///
/// What it costs beyond the decoded picture: the picture is shrunk first,
/// with image-rs's integer box filter (`thumbnail`: each source pixel
/// added to one target pixel, no buffer but the small picture), and only
/// the small picture is flattened and turned.
pub fn page_rgb(bytes: &[u8], page_idx: u32, limits: &Limits, max_side: u32, expected: Option<(u32, u32)>) -> Result<RgbImage, ParseError> {
    let (small, orientation) = {
        let (full, orientation) = decode_stored(bytes, page_idx, limits, expected)?;
        // A turn swaps the sides and keeps the long one: shrink first.
        let small = if full.width().max(full.height()) > max_side { full.thumbnail(max_side, max_side) } else { full };
        (small, orientation)
    };
    let rgb = if small.color().has_alpha() {
        let (width, height) = (small.width(), small.height());
        let rgb = small.to_rgba8().pixels().flat_map(|p| [0, 1, 2].map(|c| blend_on_white(p.0[c], p.0[3]))).collect();
        image::RgbImage::from_raw(width, height, rgb).ok_or_else(|| corrupt("a picture of the wrong size"))?
    } else {
        small.into_rgb8()
    };
    let mut turned = DynamicImage::ImageRgb8(rgb);
    turned.apply_orientation(orientation);
    let (width, height) = (turned.width(), turned.height());
    Ok(RgbImage { width, height, rgb: turned.into_rgb8().into_raw() })
}
