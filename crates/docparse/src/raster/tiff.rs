//! A TIFF's pages: where each starts, and a page read as if it were the
//! first (the header's offset overlaid, the file not copied).

use std::io::{BufRead, Cursor, Read, Seek, SeekFrom};

use super::corrupt;
use crate::ParseError;

/// Where each page of a TIFF starts (its IFD's offset), read from the IFD
/// chain without decoding a pixel; at most `max_pages` + 1 are walked (the
/// tiff crate refuses a chain that loops).
pub(super) fn tiff_pages(bytes: &[u8], max_pages: u32) -> Result<Vec<u64>, ParseError> {
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
pub(super) struct TiffPage<'a> {
    bytes: &'a [u8],
    /// The header's first-IFD offset: where, and its new bytes.
    patch_at: usize,
    patch: [u8; 8],
    patch_len: usize,
    pos: u64,
}

impl<'a> TiffPage<'a> {
    pub(super) fn new(bytes: &'a [u8], ifd: u64) -> Result<Self, ParseError> {
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
