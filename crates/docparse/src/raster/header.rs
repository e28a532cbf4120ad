//! One page's header, read under bounds before any pixel is decoded: the
//! decoder's allocations, the page's pixels and decoded bytes.

use std::io::Cursor;

use image::{ImageDecoder, ImageFormat};

use super::corrupt;
use super::tiff::TiffPage;
use crate::{Limits, ParseError};

/// What a decoder may allocate while it reads a page's header and
/// metadata (an ICC profile, text chunks, EXIF), before the page's size is
/// checked: a PNG's iCCP chunk is deflated, and a few KiB of it would
/// otherwise inflate a thousandfold before the pixel check.
pub const HEADER_ALLOC: u64 = 64 << 20;

/// Bytes a page's decoded pixels may take, per pixel of
/// [`Limits::max_image_pixels`]: 8-bit RGBA. A picture of fewer pixels at
/// a greater depth (16-bit RGB) fits if its bytes do.
pub const BYTES_PER_PIXEL: u64 = 4;

/// A PNG's width and height from its IHDR chunk, which the format puts
/// first, read by hand before any decoder allocates.
fn png_ihdr(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.get(12..16)? != b"IHDR" {
        return None;
    }
    let be = |at: usize| bytes.get(at..at + 4).and_then(|b| b.try_into().ok()).map(u32::from_be_bytes);
    Some((be(16)?, be(20)?))
}

/// Whether every top-level chunk of a WebP fits in the file: image-webp
/// allocates a metadata chunk (EXIF, read for the orientation) at the size
/// it declares, up to 4 GiB, before reading it.
fn webp_chunks_fit(bytes: &[u8]) -> Result<(), ParseError> {
    let mut at = 12usize;
    while let Some(header) = bytes.get(at..at + 8) {
        let size = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
        let end = at.saturating_add(8).saturating_add(size);
        if end > bytes.len() {
            return Err(corrupt(format!(
                "a WebP {} chunk of {size} bytes runs past the end of the file",
                String::from_utf8_lossy(&header[..4])
            )));
        }
        at = end + (size & 1);
    }
    Ok(())
}

fn too_large(page_idx: u32, (width, height): (u32, u32), limits: &Limits) -> Option<ParseError> {
    (u64::from(width) * u64::from(height) > limits.max_image_pixels).then_some(ParseError::ImageTooLarge {
        page: page_idx + 1,
        width,
        height,
        limit: limits.max_image_pixels,
    })
}

/// A decoder's error: a limit it hit is a bomb, anything else a corrupt
/// file.
pub(super) fn decoding(page_idx: u32, e: image::ImageError) -> ParseError {
    match e {
        image::ImageError::Limits(e) => ParseError::DecompressionBomb(format!(
            "page {} of the image: its decoder would allocate past its limit ({e}; {mib} MiB while it reads the header and metadata, twice the page's decoded bytes plus {mib} MiB while it decodes)",
            page_idx + 1,
            mib = HEADER_ALLOC >> 20
        )),
        e => corrupt(e),
    }
}

/// The decoder of one page, its header read (dimensions and orientation
/// known) and no pixel decoded. Every decoder is bounded while it reads the
/// header: a PNG's by [`HEADER_ALLOC`] (plus one row, which it allocates
/// with the header), after its IHDR's size is checked; a JPEG's header is
/// read from a copy of the file and bounded by it; a WebP's chunks must fit
/// in the file; a TIFF's by the tiff crate's own limits (1 MiB of values
/// per tag).
fn decoder<'a>(
    bytes: &'a [u8],
    format: ImageFormat,
    tiff_ifd: Option<u64>,
    page_idx: u32,
    limits: &Limits,
) -> Result<Box<dyn ImageDecoder + 'a>, ParseError> {
    let decoder: Box<dyn ImageDecoder + 'a> = match (format, tiff_ifd) {
        (ImageFormat::Png, _) => {
            let mut lim = image::Limits::no_limits();
            lim.max_alloc = Some(HEADER_ALLOC);
            if let Some(size) = png_ihdr(bytes) {
                if let Some(e) = too_large(page_idx, size, limits) {
                    return Err(e);
                }
                // And the row buffer the png crate reserves from the same
                // budget (8 bytes a pixel at most: RGBA of 16 bits).
                lim.max_alloc = Some(HEADER_ALLOC + u64::from(size.0) * 8);
            }
            Box::new(image::codecs::png::PngDecoder::with_limits(Cursor::new(bytes), lim).map_err(|e| decoding(page_idx, e))?)
        }
        (ImageFormat::Jpeg, _) => Box::new(image::codecs::jpeg::JpegDecoder::new(Cursor::new(bytes)).map_err(|e| decoding(page_idx, e))?),
        (ImageFormat::WebP, _) => {
            webp_chunks_fit(bytes)?;
            Box::new(image::codecs::webp::WebPDecoder::new(Cursor::new(bytes)).map_err(|e| decoding(page_idx, e))?)
        }
        (_, Some(ifd)) => Box::new(image::codecs::tiff::TiffDecoder::new(TiffPage::new(bytes, ifd)?).map_err(|e| decoding(page_idx, e))?),
        (_, None) => Box::new(image::codecs::tiff::TiffDecoder::new(Cursor::new(bytes)).map_err(|e| decoding(page_idx, e))?),
    };
    Ok(decoder)
}

/// Whether an orientation turns the image a quarter (width and height swap).
fn quarter_turn(o: image::metadata::Orientation) -> bool {
    use image::metadata::Orientation::*;
    matches!(o, Rotate90 | Rotate270 | Rotate90FlipH | Rotate270FlipH)
}

/// One page's header: its size as stored and as displayed.
pub(super) struct Header<'a> {
    pub(super) decoder: Box<dyn ImageDecoder + 'a>,
    pub(super) orientation: image::metadata::Orientation,
    /// Displayed (orientation applied).
    pub(super) width: u32,
    pub(super) height: u32,
}

/// Reads one page's header and refuses it if it has more pixels than the
/// limit, before anything is decoded.
pub(super) fn header<'a>(
    bytes: &'a [u8],
    format: ImageFormat,
    tiff_ifd: Option<u64>,
    page_idx: u32,
    limits: &Limits,
) -> Result<Header<'a>, ParseError> {
    let mut decoder = decoder(bytes, format, tiff_ifd, page_idx, limits)?;
    let (w, h) = decoder.dimensions();
    if let Some(e) = too_large(page_idx, (w, h), limits) {
        return Err(e);
    }
    let pixels = u64::from(w) * u64::from(h);
    if pixels == 0 {
        return Err(corrupt(format!("page {} is {w} × {h} pixels", page_idx + 1)));
    }
    // A broken orientation tag is no reason to refuse the picture.
    let orientation = decoder.orientation().unwrap_or(image::metadata::Orientation::NoTransforms);
    let (width, height) = if quarter_turn(orientation) { (h, w) } else { (w, h) };
    // The decoded pixels at the file's own depth (a 16-bit RGBA PNG takes 8
    // bytes a pixel) are bounded in bytes, not only in pixels.
    let budget = limits.max_image_pixels.saturating_mul(BYTES_PER_PIXEL);
    let decoded = decoder.total_bytes();
    if decoded > budget {
        return Err(ParseError::ImageTooDeep {
            page: page_idx + 1,
            width: w,
            height: h,
            color: format!("{:?}", decoder.color_type()),
            bytes: decoded,
            limit: budget,
        });
    }
    // The decoder's own allocations: the pixels, and as much again plus
    // HEADER_ALLOC for its working buffers (a TIFF's strips).
    let mut lim = image::Limits::no_limits();
    lim.max_alloc = Some(decoded.saturating_mul(2).saturating_add(HEADER_ALLOC));
    decoder.set_limits(lim).map_err(|e| decoding(page_idx, e))?;
    Ok(Header { decoder, orientation, width, height })
}
