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

use std::io::{BufRead, Cursor, Read, Seek, SeekFrom};

use image::{DynamicImage, ImageDecoder, ImageFormat};

use crate::{Format, Limits, PageSize, ParseError};

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

/// Where each page of a TIFF starts (its IFD's offset), read from the IFD
/// chain without decoding a pixel; at most `max_pages` + 1 are walked (the
/// tiff crate refuses a chain that loops).
fn tiff_pages(bytes: &[u8], max_pages: u32) -> Result<Vec<u64>, ParseError> {
    let mut decoder = tiff::decoder::Decoder::new(Cursor::new(bytes)).map_err(corrupt)?;
    let mut pages = Vec::new();
    loop {
        let ptr = decoder.ifd_pointer().ok_or_else(|| corrupt("a TIFF page without a directory"))?;
        pages.push(ptr.0);
        if pages.len() as u64 > u64::from(max_pages) || !decoder.more_images() {
            return Ok(pages);
        }
        decoder.next_image().map_err(corrupt)?;
    }
}

/// The bytes of a TIFF as a reader sees them when its header points at
/// another page's directory: a decoder reads that page as the first. The
/// file is not copied; only the header's offset is overlaid.
struct TiffPage<'a> {
    bytes: &'a [u8],
    /// The header's first-IFD offset: where, and its new bytes.
    patch_at: usize,
    patch: [u8; 8],
    patch_len: usize,
    pos: u64,
}

impl<'a> TiffPage<'a> {
    fn new(bytes: &'a [u8], ifd: u64) -> Result<Self, ParseError> {
        let little = bytes.starts_with(b"II");
        let big_tiff = bytes.get(2..4).is_some_and(|v| v == [43, 0] || v == [0, 43]);
        let mut patch = [0u8; 8];
        let (patch_at, patch_len) = if big_tiff {
            patch = if little { ifd.to_le_bytes() } else { ifd.to_be_bytes() };
            (8, 8)
        } else {
            let ifd = u32::try_from(ifd).map_err(|_| corrupt("a TIFF directory past 4 GiB in a classic TIFF"))?;
            patch[..4].copy_from_slice(&if little { ifd.to_le_bytes() } else { ifd.to_be_bytes() });
            (4, 4)
        };
        if bytes.len() < patch_at + patch_len {
            return Err(corrupt("a truncated TIFF header"));
        }
        Ok(TiffPage { bytes, patch_at, patch, patch_len, pos: 0 })
    }

    /// The bytes from the current position up to the next seam of the
    /// overlay.
    fn available(&self) -> &[u8] {
        let pos = usize::try_from(self.pos).unwrap_or(usize::MAX).min(self.bytes.len());
        let end = self.patch_at + self.patch_len;
        if pos < self.patch_at {
            &self.bytes[pos..self.patch_at]
        } else if pos < end {
            &self.patch[pos - self.patch_at..self.patch_len]
        } else {
            &self.bytes[pos..]
        }
    }
}

impl Read for TiffPage<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = {
            let src = self.available();
            let n = src.len().min(buf.len());
            buf[..n].copy_from_slice(&src[..n]);
            n
        };
        self.pos += n as u64;
        Ok(n)
    }
}

impl BufRead for TiffPage<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        Ok(self.available())
    }

    fn consume(&mut self, amt: usize) {
        self.pos += amt as u64;
    }
}

impl Seek for TiffPage<'_> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => (self.bytes.len() as u64).checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = target.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start"))?;
        Ok(self.pos)
    }
}

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
fn decoding(page_idx: u32, e: image::ImageError) -> ParseError {
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
struct Header<'a> {
    decoder: Box<dyn ImageDecoder + 'a>,
    orientation: image::metadata::Orientation,
    /// Displayed (orientation applied).
    width: u32,
    height: u32,
}

/// Reads one page's header and refuses it if it has more pixels than the
/// limit, before anything is decoded.
fn header<'a>(
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
