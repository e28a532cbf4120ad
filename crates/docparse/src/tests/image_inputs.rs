//! Images written by the tests themselves (image-rs and tiff encoders,
//! already dependencies of the parser): grey pictures drawn pixel by
//! pixel, a JPEG with an EXIF orientation, a multi-page TIFF, WebP, a real
//! decompression-bomb PNG and broken files. Shared with the integration
//! tests (`crates/cli/tests/it/images.rs`).

#![allow(dead_code)]

use std::io::{Cursor, Write};

/// A grey picture: `ink(x, y)` says which pixels are black.
pub fn gray(width: u32, height: u32, ink: impl Fn(u32, u32) -> bool) -> image::GrayImage {
    image::GrayImage::from_fn(width, height, |x, y| image::Luma([if ink(x, y) { 0 } else { 255 }]))
}

pub fn encode(img: &image::GrayImage, format: image::ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, format).unwrap();
    out.into_inner()
}

pub fn png(img: &image::GrayImage) -> Vec<u8> {
    encode(img, image::ImageFormat::Png)
}

pub fn webp(img: &image::GrayImage) -> Vec<u8> {
    // image-rs writes lossless WebP.
    let rgb = image::DynamicImage::ImageLuma8(img.clone()).to_rgb8();
    let mut out = Cursor::new(Vec::new());
    rgb.write_to(&mut out, image::ImageFormat::WebP).unwrap();
    out.into_inner()
}

/// An EXIF block (as in a JPEG's APP1 after `Exif\0\0`, or a PNG's eXIf
/// chunk) holding only the orientation tag (1-8).
pub fn exif_orientation(orientation: u16) -> Vec<u8> {
    let mut t = b"II*\0".to_vec();
    t.extend_from_slice(&8u32.to_le_bytes());
    t.extend_from_slice(&1u16.to_le_bytes());
    // tag 0x0112, type SHORT, count 1, value (padded to 4 bytes)
    t.extend_from_slice(&0x0112u16.to_le_bytes());
    t.extend_from_slice(&3u16.to_le_bytes());
    t.extend_from_slice(&1u32.to_le_bytes());
    t.extend_from_slice(&orientation.to_le_bytes());
    t.extend_from_slice(&[0, 0]);
    t.extend_from_slice(&0u32.to_le_bytes());
    t
}

/// A JPEG of `img` whose EXIF says how to turn it for display: a phone
/// held sideways stores the picture as its sensor saw it and orientation
/// 6 ("turn 90° clockwise").
pub fn jpeg_with_orientation(img: &image::GrayImage, orientation: u16) -> Vec<u8> {
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 95).encode_image(img).unwrap();
    let mut app1 = b"Exif\0\0".to_vec();
    app1.extend_from_slice(&exif_orientation(orientation));
    let mut segment = vec![0xff, 0xe1];
    segment.extend_from_slice(&((app1.len() + 2) as u16).to_be_bytes());
    segment.extend_from_slice(&app1);
    // Right after the start-of-image marker.
    out.splice(2..2, segment);
    out
}

/// The picture as stored when a reader must turn it 90° clockwise to
/// display `img` (EXIF orientation 6): `img` turned 90° counter-clockwise.
pub fn stored_for_orientation_6(img: &image::GrayImage) -> image::GrayImage {
    image::imageops::rotate270(img)
}

/// A TIFF with one page per picture; `orientation` (when not 1) is
/// written on the page of that index.
pub fn tiff(pages: &[image::GrayImage], oriented: Option<(usize, u16)>) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    {
        let mut enc = tiff::encoder::TiffEncoder::new(&mut out).unwrap();
        for (i, p) in pages.iter().enumerate() {
            let mut page = enc.new_image::<tiff::encoder::colortype::Gray8>(p.width(), p.height()).unwrap();
            if let Some((at, o)) = oriented {
                if at == i {
                    page.encoder().write_tag(tiff::tags::Tag::Orientation, o).unwrap();
                }
            }
            page.write_data(p.as_raw()).unwrap();
        }
    }
    out.into_inner()
}

fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut c = (data.len() as u32).to_be_bytes().to_vec();
    c.extend_from_slice(kind);
    c.extend_from_slice(data);
    let mut crc = flate2::Crc::new();
    crc.update(kind);
    crc.update(data);
    c.extend_from_slice(&crc.sum().to_be_bytes());
    c
}

/// A real decompression bomb: a valid `side` × `side` black-and-white PNG
/// (1 bit per pixel, all white), some tens of KiB for 20,000 × 20,000
/// (400 million pixels, 1.2 GB as RGB).
pub fn png_bomb(side: u32) -> Vec<u8> {
    let mut ihdr = side.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&side.to_be_bytes());
    ihdr.extend_from_slice(&[1, 0, 0, 0, 0]); // 1 bit, grey, deflate, no filter method, no interlace
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    let row = vec![0xffu8; 1 + side.div_ceil(8) as usize];
    let mut row = row;
    row[0] = 0; // filter type: none
    for _ in 0..side {
        z.write_all(&row).unwrap();
    }
    let idat = z.finish().unwrap();
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    out.extend(chunk(b"IHDR", &ihdr));
    out.extend(chunk(b"IDAT", &idat));
    out.extend(chunk(b"IEND", b""));
    out
}

/// `png` with an eXIf chunk (the EXIF orientation, 1-8) right after its
/// header chunk.
pub fn with_exif(mut png: Vec<u8>, orientation: u16) -> Vec<u8> {
    // Signature (8) and IHDR (4 + 4 + 13 + 4).
    let at = 8 + 25;
    png.splice(at..at, chunk(b"eXIf", &exif_orientation(orientation)));
    png
}

/// A 1 × 1 PNG whose iCCP chunk (an ICC profile, deflated) inflates to
/// `mib` MiB of zeros from about a thousandth of that: a bomb in the
/// metadata, which a decoder inflates while it reads the header, before
/// the picture's size could stop it. The deflate stream is one MiB of
/// zeros compressed once (non-final blocks, ended by a sync flush so they
/// end on a byte) and repeated, then an empty final block.
pub fn png_iccp_bomb(mib: u32) -> Vec<u8> {
    let mut once = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    once.write_all(&vec![0u8; 1 << 20]).unwrap();
    once.flush().unwrap();
    let once = once.get_ref().clone();
    let mut profile = b"bomb\0\0".to_vec(); // name, its NUL, compression method 0
    profile.extend_from_slice(&[0x78, 0xda]); // zlib header
    for _ in 0..mib {
        profile.extend_from_slice(&once);
    }
    // A final empty stored block.
    profile.extend_from_slice(&[0x01, 0x00, 0x00, 0xff, 0xff]);
    // Adler-32 of n zeros: a = 1, b = n (mod 65521).
    let n = (u64::from(mib) << 20) % 65521;
    profile.extend_from_slice(&(((n as u32) << 16) | 1).to_be_bytes());
    let mut ihdr = 1u32.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&1u32.to_be_bytes());
    ihdr.extend_from_slice(&[8, 0, 0, 0, 0]);
    let mut idat = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    idat.write_all(&[0, 0]).unwrap(); // filter none, one black pixel
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    out.extend(chunk(b"IHDR", &ihdr));
    out.extend(chunk(b"iCCP", &profile));
    out.extend(chunk(b"IDAT", &idat.finish().unwrap()));
    out.extend(chunk(b"IEND", b""));
    out
}

/// A PNG whose header says `width` × `height` and whose data is cut short:
/// decoding it would fail, so refusing it as too large proves the refusal
/// came from the header alone.
pub fn png_header_only(width: u32, height: u32) -> Vec<u8> {
    let mut ihdr = width.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 0, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    out.extend(chunk(b"IHDR", &ihdr));
    out.extend(chunk(b"IDAT", b"\x78\x9c\x01\x02"));
    out
}

/// `bytes` cut to `keep` of its length (a download that broke off).
pub fn truncated(mut bytes: Vec<u8>, keep: f32) -> Vec<u8> {
    bytes.truncate((bytes.len() as f32 * keep) as usize);
    bytes
}
