//! Judging an upload by its first bytes and its filename, before it is
//! stored.

use crate::format::Format;
use crate::raster;

/// Extensions of files that are never documents (programs, scripts,
/// images, archives), refused whatever type the client declares: a
/// `setup.exe` sent as `text/plain` is not a text.
const NEVER_DOCUMENTS: &[&str] = &[
    "exe", "dll", "so", "dylib", "bin", "msi", "com", "scr", "bat", "cmd", "ps1", "sh", "vbs", "js", "mjs", "jar", "apk", "svg", "svgz",
    "gif", "bmp", "ico", "zip", "gz", "tgz", "bz2", "xz", "7z", "rar", "tar", "iso", "dmg", "wasm", "class", "swf",
];

/// Magic numbers of binary files that are never a text document.
const BINARY_MAGIC: &[&[u8]] = &[
    b"MZ",
    b"\x7fELF",
    b"PK\x03\x04",
    b"%PDF",
    b"\x89PNG",
    b"GIF8",
    b"\xff\xd8\xff",
    b"\x1f\x8b",
    b"7z\xbc\xaf",
    b"Rar!",
    b"\xca\xfe\xba\xbe",
    b"\0asm",
    b"\xd0\xcf\x11\xe0",
];

/// The signature of an OLE compound file (XLS, and encrypted OOXML).
pub(crate) const OLE_MAGIC: &[u8] = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1";

/// Why an upload's first bytes or its filename disagree with its format;
/// the `Display` is the reason the refusal (415) gives.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SniffError {
    /// A program, script, image or archive by its extension (lowercase).
    #[error("files ending in .{0} are not documents")]
    NeverADocument(String),
    #[error("the file does not start like a PDF (no %PDF header)")]
    NotPdf,
    /// Not a zip archive, as the named format ("a DOCX", "an ODS
    /// spreadsheet") is.
    #[error("the file is not a zip archive, as {0} is")]
    NotZip(&'static str),
    #[error("the file is not an OLE compound file, as an XLS workbook is")]
    NotOle,
    #[error("the file is not a PNG, JPEG, TIFF or WebP image")]
    NotImage,
    /// Sent as text, it starts with a binary format's magic number.
    #[error("the file is binary (it starts with {0:?}), not text")]
    BinaryMagic(String),
    #[error("the file holds NUL bytes: it is binary, not text")]
    NulBytes,
    /// Sent as text; the offset of the first byte that is not UTF-8.
    #[error("the file is not UTF-8 text (invalid byte at {0})")]
    NotUtf8(usize),
    #[error("the file is not a JSON object, as Document AI output is")]
    NotJsonObject,
}

/// Whether the first bytes of an upload (`head`, the first few KiB) and
/// its filename agree with the format its declared type or name gave:
/// uploads are judged by their bytes too, so a wrong type is refused at
/// the door (415) rather than failing in the parser later. `Err` says why.
pub fn sniff(format: Format, filename: &str, head: &[u8]) -> Result<(), SniffError> {
    let ext = filename.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    if NEVER_DOCUMENTS.contains(&ext.as_str()) {
        return Err(SniffError::NeverADocument(ext));
    }
    match format {
        Format::Pdf if head[..head.len().min(1024)].windows(4).any(|w| w == b"%PDF") => Ok(()),
        Format::Pdf => Err(SniffError::NotPdf),
        Format::Docx if head.starts_with(b"PK\x03\x04") => Ok(()),
        Format::Docx => Err(SniffError::NotZip("a DOCX")),
        // A password-protected PPTX is an OLE file, like an XLSX: the
        // parser says it is encrypted.
        Format::Pptx if head.starts_with(b"PK\x03\x04") || head.starts_with(OLE_MAGIC) => Ok(()),
        Format::Pptx => Err(SniffError::NotZip("a PPTX presentation")),
        Format::Odp if head.starts_with(b"PK\x03\x04") => Ok(()),
        Format::Odp => Err(SniffError::NotZip("an ODP presentation")),
        Format::Ods if head.starts_with(b"PK\x03\x04") => Ok(()),
        Format::Ods => Err(SniffError::NotZip("an ODS spreadsheet")),
        // A password-protected XLSX is an OLE compound file holding the
        // encrypted package: let it through, so the parser says why it
        // cannot be read instead of a vague refusal here.
        Format::Xlsx if head.starts_with(b"PK\x03\x04") || head.starts_with(OLE_MAGIC) => Ok(()),
        Format::Xlsx => Err(SniffError::NotZip("an XLSX workbook")),
        Format::Xls if head.starts_with(OLE_MAGIC) => Ok(()),
        Format::Xls => Err(SniffError::NotOle),
        // Judged by content: a .jpg that is really a PNG is read as one.
        Format::Png | Format::Jpeg | Format::Tiff | Format::Webp if raster::is_image(head) => Ok(()),
        Format::Png | Format::Jpeg | Format::Tiff | Format::Webp => Err(SniffError::NotImage),
        Format::Text | Format::Markdown | Format::Html | Format::DocAi | Format::Csv | Format::Tsv => {
            let body = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
            if let Some(magic) = BINARY_MAGIC.iter().find(|m| body.starts_with(m)) {
                return Err(SniffError::BinaryMagic(String::from_utf8_lossy(magic).into_owned()));
            }
            if body.contains(&0) {
                return Err(SniffError::NulBytes);
            }
            // The head may end inside a character: only a real error counts.
            if let Err(e) = std::str::from_utf8(body) {
                if e.error_len().is_some() {
                    return Err(SniffError::NotUtf8(e.valid_up_to()));
                }
            }
            if format == Format::DocAi && !body.trim_ascii_start().starts_with(b"{") {
                return Err(SniffError::NotJsonObject);
            }
            Ok(())
        }
    }
}
