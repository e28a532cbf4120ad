//! Document parsing without I/O: bytes in, the full raw text and the
//! paragraph-level segments that tile it out.
//!
//! Supported: plain text, Markdown, HTML, PDF with a text layer, DOCX,
//! Google Document AI JSON, spreadsheets (CSV, TSV, XLSX, XLS, ODS), and
//! with a recogniser ([`PageOcr`]) scanned PDF pages and images (PNG, JPEG,
//! TIFF, WebP). Every failure is a [`ParseError`] with a stable
//! [`ParseError::code`]; nothing here panics on hostile input (PDF
//! extraction is additionally isolated with `catch_unwind`).

mod cells;
mod docai;
mod docx;
pub mod geometry;
mod html;
mod numfmt;
mod ocr;
mod pdf;
pub mod raster;
pub mod segments;
pub mod sheet;
mod slides;

use serde::{Deserialize, Serialize};

pub use cells::{CellRange, CellText};
pub use geometry::{Axis, LineFragment, PageBox, PageSize, Rect};
pub use ocr::{OcrError, OcrPage, OcrWord};
pub use segments::{char_slice, Block, Segment};

pub const PARSER_NAME: &str = "rag-docparse";
/// Bump when the output for the same input changes.
pub const PARSER_VERSION: &str = "6";

/// What one document may cost the parser. Every bound is checked against
/// work actually done (bytes inflated, characters produced, pages seen),
/// never against sizes the input declares about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Largest input accepted.
    pub max_bytes: u64,
    /// Longest segment; longer paragraphs split at sentence boundaries.
    pub max_segment_chars: usize,
    /// Largest number of bytes inflated from one archive entry or one PDF
    /// stream, and from a whole DOCX.
    pub max_unzipped_bytes: u64,
    /// Largest number of bytes inflated from all the streams of one PDF.
    pub max_pdf_inflated_bytes: u64,
    /// Largest decompressed/compressed ratio of an archive entry.
    pub max_compression_ratio: u64,
    /// Most pages a document may have.
    pub max_pages: u32,
    /// The text produced (characters, each with its box) may be at most
    /// this multiple of the input's size ...
    pub max_output_ratio: u64,
    /// ... or this many characters, whichever is larger (a small compressed
    /// input may legitimately expand).
    pub min_output_chars: u64,
    /// Most pages of one document read by OCR; later pages stay without text.
    pub ocr_max_pages: u32,
    /// OCR time for one document, in seconds, all pages together.
    pub ocr_budget_secs: u64,
    /// Most non-empty cells one sheet of a spreadsheet may have; a larger
    /// sheet is refused (`too_many_cells`), never read into memory whole.
    pub max_sheet_cells: u64,
    /// Most pixels of one image (one page of a TIFF), read from its header
    /// before anything is decoded: a larger one is refused
    /// (`image_too_large`), so a decompression bomb never allocates its
    /// pixels.
    pub max_image_pixels: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 100 * 1024 * 1024,
            max_segment_chars: 600,
            max_unzipped_bytes: 256 * 1024 * 1024,
            max_pdf_inflated_bytes: 1024 * 1024 * 1024,
            max_compression_ratio: 200,
            max_pages: 2_000,
            max_output_ratio: 16,
            min_output_chars: 4 * 1024 * 1024,
            ocr_max_pages: 100,
            ocr_budget_secs: 600,
            max_sheet_cells: 1_000_000,
            max_image_pixels: 50_000_000,
        }
    }
}

impl Limits {
    /// Most characters of text (and per-character boxes) a document of
    /// `input_len` bytes may produce: never over [`MAX_OUTPUT_CHARS`].
    pub fn max_output_chars(&self, input_len: usize) -> u64 {
        (input_len as u64).saturating_mul(self.max_output_ratio).max(self.min_output_chars).min(MAX_OUTPUT_CHARS)
    }
}

/// Most characters any document may produce: 64 Mi, a book of some
/// 30,000 pages. It bounds what a parse worker hands back to the process.
pub const MAX_OUTPUT_CHARS: u64 = 64 * 1024 * 1024;

/// Counts output against [`Limits::max_output_chars`]; a parser takes from
/// it before it copies text, so a hostile input is refused before it
/// costs the memory.
#[derive(Debug)]
pub(crate) struct OutputBudget {
    left: u64,
    limit: u64,
}

impl OutputBudget {
    pub(crate) fn new(limits: &Limits, input_len: usize) -> Self {
        let limit = limits.max_output_chars(input_len);
        OutputBudget { left: limit, limit }
    }

    pub(crate) fn take(&mut self, chars: usize) -> Result<(), ParseError> {
        match self.left.checked_sub(chars as u64) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => Err(ParseError::OutputTooLarge { limit: self.limit }),
        }
    }
}

/// The parser's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParsedDocument {
    pub format: Format,
    pub full_text: String,
    pub segments: Vec<Segment>,
    /// Pages in the source (1 for formats without pages).
    pub page_count: u32,
    /// Zero-based pages left without text: no text layer and OCR absent,
    /// failed or empty. Their content is not searchable.
    pub pages_without_text: Vec<u32>,
    /// Zero-based pages whose text came from OCR.
    pub ocr_pages: Vec<u32>,
    /// Why OCR failed, per page (the page stays in `pages_without_text`).
    pub ocr_failures: Vec<(u32, String)>,
    /// Size of each page the boxes of the segments are on (formats with
    /// pages only).
    pub pages: Vec<PageSize>,
}

/// Text recognition for PDF pages without a text layer. The parser stays
/// free of I/O: the caller supplies the recogniser (tesseract in the
/// parser stage, a fake in tests).
pub trait PageOcr: Send + Sync {
    /// The words of zero-based page `page_idx` of the PDF `pdf`, with
    /// their boxes in points on the page as displayed.
    /// `size` is the page's displayed size in points when the parser knows
    /// it (a recogniser bounds its rendering by it).
    fn recognize(&self, pdf: &[u8], page_idx: u32, size: Option<&PageSize>) -> Result<OcrPage, OcrError>;

    /// The words of one image page (already oriented), with their boxes
    /// in its pixels.
    fn recognize_image(&self, image: &raster::GrayImage) -> Result<OcrPage, OcrError> {
        let _ = image;
        Err(OcrError::Unsupported("this recogniser reads PDF pages only"))
    }
}

impl ParsedDocument {
    pub fn char_count(&self) -> u64 {
        self.segments.last().map(|s| s.char_end).unwrap_or(0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    Text,
    Markdown,
    Html,
    Pdf,
    Docx,
    Pptx,
    Odp,
    DocAi,
    Csv,
    Tsv,
    Xlsx,
    Xls,
    Ods,
    Png,
    Jpeg,
    Tiff,
    Webp,
}

impl Format {
    /// Every format, in the order the documentation lists them.
    pub const ALL: &'static [Format] = &[
        Format::Pdf,
        Format::Docx,
        Format::Pptx,
        Format::Odp,
        Format::Html,
        Format::Markdown,
        Format::Text,
        Format::DocAi,
        Format::Xlsx,
        Format::Xls,
        Format::Ods,
        Format::Csv,
        Format::Tsv,
        Format::Png,
        Format::Jpeg,
        Format::Tiff,
        Format::Webp,
    ];

    /// The file extensions that name the format when the client sends no
    /// specific content type (`application/octet-stream` or none).
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            Format::Text => &["txt", "text"],
            Format::Markdown => &["md", "markdown"],
            Format::Html => &["html", "htm"],
            Format::Pdf => &["pdf"],
            Format::Docx => &["docx"],
            Format::Pptx => &["pptx"],
            Format::Odp => &["odp"],
            Format::DocAi => &["json"],
            Format::Csv => &["csv"],
            Format::Tsv => &["tsv", "tab"],
            Format::Xlsx => &["xlsx"],
            Format::Xls => &["xls"],
            Format::Ods => &["ods"],
            Format::Png => &["png"],
            Format::Jpeg => &["jpg", "jpeg", "jpe"],
            Format::Tiff => &["tif", "tiff"],
            Format::Webp => &["webp"],
        }
    }

    /// The format's name as people call it ("PDF", "plain text").
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "plain text",
            Format::Markdown => "Markdown",
            Format::Html => "HTML",
            Format::Pdf => "PDF",
            Format::Docx => "DOCX",
            Format::Pptx => "PPTX",
            Format::Odp => "ODP",
            Format::DocAi => "Document AI JSON",
            Format::Csv => "CSV",
            Format::Tsv => "TSV",
            Format::Xlsx => "XLSX",
            Format::Xls => "XLS",
            Format::Ods => "ODS",
            Format::Png => "PNG",
            Format::Jpeg => "JPEG",
            Format::Tiff => "TIFF",
            Format::Webp => "WebP",
        }
    }

    /// Every format's name, in [`Format::ALL`]'s order: "PDF, DOCX, …
    /// or WebP".
    pub fn all_names() -> String {
        let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        match names.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// Whether the format is an image (read by OCR, its pages in pixels).
    pub fn is_image(self) -> bool {
        matches!(self, Format::Png | Format::Jpeg | Format::Tiff | Format::Webp)
    }

    /// Whether the format is a presentation: its pages are slides, and a
    /// citation on `page_idx` N-1 says "slide N".
    pub fn is_presentation(self) -> bool {
        matches!(self, Format::Pptx | Format::Odp)
    }

    /// The canonical content type of the format (what an upload records
    /// when the client sent only a generic type).
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain",
            Format::Markdown => "text/markdown",
            Format::Html => "text/html",
            Format::Pdf => "application/pdf",
            Format::Docx => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            Format::Pptx => PPTX_TYPE,
            Format::Odp => ODP_TYPE,
            Format::DocAi => "application/json",
            Format::Csv => "text/csv",
            Format::Tsv => "text/tab-separated-values",
            Format::Xlsx => XLSX_TYPE,
            Format::Xls => "application/vnd.ms-excel",
            Format::Ods => "application/vnd.oasis.opendocument.spreadsheet",
            Format::Png => "image/png",
            Format::Jpeg => "image/jpeg",
            Format::Tiff => "image/tiff",
            Format::Webp => "image/webp",
        }
    }
}

const XLSX_TYPE: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const PPTX_TYPE: &str = "application/vnd.openxmlformats-officedocument.presentationml.presentation";
const ODP_TYPE: &str = "application/vnd.oasis.opendocument.presentation";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("the file is empty")]
    Empty,
    #[error("unsupported content type {content_type:?} ({filename})")]
    UnsupportedContentType { content_type: String, filename: String },
    #[error("the file is {size} bytes, over the limit of {limit}")]
    TooLarge { size: u64, limit: u64 },
    #[error("the text is not valid UTF-8 (first bad byte at {0})")]
    InvalidUtf8(usize),
    #[error("corrupt PDF: {0}")]
    CorruptPdf(String),
    #[error("the PDF is encrypted and cannot be read without a password")]
    EncryptedPdf,
    #[error("corrupt DOCX: {0}")]
    CorruptDocx(String),
    #[error("corrupt presentation: {0}")]
    CorruptPresentation(String),
    #[error("the presentation is password-protected (encrypted) and cannot be read without its password")]
    EncryptedPresentation,
    #[error("decompression bomb: {0}")]
    DecompressionBomb(String),
    #[error("invalid Document AI JSON: {0}")]
    InvalidDocAi(String),
    #[error("no text could be extracted ({0})")]
    NoText(String),
    #[error("the document has {pages} pages, over the limit of {limit}")]
    TooManyPages { pages: u64, limit: u32 },
    #[error("the document expands to more than {limit} characters of text, out of proportion to its size")]
    OutputTooLarge { limit: u64 },
    #[error("corrupt spreadsheet: {0}")]
    CorruptSpreadsheet(String),
    #[error("the workbook is password-protected (encrypted) and cannot be read without its password")]
    EncryptedSpreadsheet,
    #[error("sheet {sheet:?} has {cells} or more non-empty cells, over the limit of {limit} (PARSE_MAX_SHEET_CELLS)")]
    TooManyCells { sheet: String, cells: u64, limit: u64 },
    #[error("corrupt image: {0}")]
    CorruptImage(String),
    #[error("page {page} of the image is {width} × {height} pixels, over the limit of {limit} pixels (PARSE_MAX_IMAGE_PIXELS): refused before decoding (a decompression bomb is a small file of a huge image)")]
    ImageTooLarge { page: u32, width: u32, height: u32, limit: u64 },
    #[error("page {page} of the image ({width} × {height} pixels of {color}) decodes to {bytes} bytes, over the limit of {limit} bytes (4 bytes a pixel of PARSE_MAX_IMAGE_PIXELS): refused before decoding")]
    ImageTooDeep { page: u32, width: u32, height: u32, color: String, bytes: u64, limit: u64 },
}

impl ParseError {
    /// Stable machine-readable code, carried in DocumentParsed.failure.
    pub fn code(&self) -> &'static str {
        match self {
            ParseError::Empty => "empty_file",
            ParseError::UnsupportedContentType { .. } => "unsupported_content_type",
            ParseError::TooLarge { .. } => "too_large",
            ParseError::InvalidUtf8(_) => "invalid_utf8",
            ParseError::CorruptPdf(_) => "corrupt_pdf",
            ParseError::EncryptedPdf => "encrypted_pdf",
            ParseError::CorruptDocx(_) => "corrupt_docx",
            ParseError::CorruptPresentation(_) => "corrupt_presentation",
            ParseError::EncryptedPresentation => "encrypted_presentation",
            ParseError::DecompressionBomb(_) => "decompression_bomb",
            ParseError::InvalidDocAi(_) => "invalid_docai",
            ParseError::NoText(_) => "no_text",
            ParseError::TooManyPages { .. } => "too_many_pages",
            ParseError::OutputTooLarge { .. } => "output_too_large",
            ParseError::CorruptSpreadsheet(_) => "corrupt_spreadsheet",
            ParseError::EncryptedSpreadsheet => "encrypted_spreadsheet",
            ParseError::TooManyCells { .. } => "too_many_cells",
            ParseError::CorruptImage(_) => "corrupt_image",
            ParseError::ImageTooLarge { .. } | ParseError::ImageTooDeep { .. } => "image_too_large",
        }
    }
}

/// Decides the format from the content type, falling back to the file
/// extension when the type is generic.
pub fn detect_format(content_type: &str, filename: &str) -> Option<Format> {
    let ct = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let by_type = match ct.as_str() {
        "text/plain" => Some(Format::Text),
        "text/markdown" | "text/x-markdown" => Some(Format::Markdown),
        "text/html" | "application/xhtml+xml" => Some(Format::Html),
        "application/pdf" => Some(Format::Pdf),
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => Some(Format::Docx),
        PPTX_TYPE => Some(Format::Pptx),
        ODP_TYPE => Some(Format::Odp),
        "application/json" | "application/vnd.google.documentai+json" => Some(Format::DocAi),
        "text/csv" | "application/csv" | "text/x-csv" | "text/comma-separated-values" => Some(Format::Csv),
        "text/tab-separated-values" => Some(Format::Tsv),
        XLSX_TYPE => Some(Format::Xlsx),
        "application/vnd.ms-excel" => Some(Format::Xls),
        "application/vnd.oasis.opendocument.spreadsheet" => Some(Format::Ods),
        "image/png" => Some(Format::Png),
        "image/jpeg" | "image/jpg" | "image/pjpeg" => Some(Format::Jpeg),
        "image/tiff" | "image/tif" | "image/x-tiff" => Some(Format::Tiff),
        "image/webp" => Some(Format::Webp),
        _ => None,
    };
    let ext = filename.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    // A type that is generic for tables: browsers on Windows with Excel
    // installed send every .csv as application/vnd.ms-excel, and many
    // clients send it as text/plain. The extension says which table it is.
    if matches!(by_type, Some(Format::Xls | Format::Text)) {
        if let Some(table) = [Format::Csv, Format::Tsv].into_iter().find(|f| f.extensions().contains(&ext.as_str())) {
            return Some(table);
        }
    }
    if by_type.is_some() {
        return by_type;
    }
    if !(ct.is_empty() || ct == "application/octet-stream" || ct == "binary/octet-stream") {
        return None;
    }
    Format::ALL.iter().copied().find(|f| f.extensions().contains(&ext.as_str()))
}

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

/// Whether the first bytes of an upload (`head`, the first few KiB) and
/// its filename agree with the format its declared type or name gave:
/// uploads are judged by their bytes too, so a wrong type is refused at
/// the door (415) rather than failing in the parser later. `Err` says why.
pub fn sniff(format: Format, filename: &str, head: &[u8]) -> Result<(), String> {
    let ext = filename.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    if NEVER_DOCUMENTS.contains(&ext.as_str()) {
        return Err(format!("files ending in .{ext} are not documents"));
    }
    match format {
        Format::Pdf if head[..head.len().min(1024)].windows(4).any(|w| w == b"%PDF") => Ok(()),
        Format::Pdf => Err("the file does not start like a PDF (no %PDF header)".into()),
        Format::Docx if head.starts_with(b"PK\x03\x04") => Ok(()),
        Format::Docx => Err("the file is not a zip archive, as a DOCX is".into()),
        // A password-protected PPTX is an OLE file, like an XLSX: the
        // parser says it is encrypted.
        Format::Pptx if head.starts_with(b"PK\x03\x04") || head.starts_with(OLE_MAGIC) => Ok(()),
        Format::Pptx => Err("the file is not a zip archive, as a PPTX presentation is".into()),
        Format::Odp if head.starts_with(b"PK\x03\x04") => Ok(()),
        Format::Odp => Err("the file is not a zip archive, as an ODP presentation is".into()),
        Format::Ods if head.starts_with(b"PK\x03\x04") => Ok(()),
        Format::Ods => Err("the file is not a zip archive, as an ODS spreadsheet is".into()),
        // A password-protected XLSX is an OLE compound file holding the
        // encrypted package: let it through, so the parser says why it
        // cannot be read instead of a vague refusal here.
        Format::Xlsx if head.starts_with(b"PK\x03\x04") || head.starts_with(OLE_MAGIC) => Ok(()),
        Format::Xlsx => Err("the file is not a zip archive, as an XLSX workbook is".into()),
        Format::Xls if head.starts_with(OLE_MAGIC) => Ok(()),
        Format::Xls => Err("the file is not an OLE compound file, as an XLS workbook is".into()),
        // Judged by content: a .jpg that is really a PNG is read as one.
        Format::Png | Format::Jpeg | Format::Tiff | Format::Webp if raster::is_image(head) => Ok(()),
        Format::Png | Format::Jpeg | Format::Tiff | Format::Webp => Err("the file is not a PNG, JPEG, TIFF or WebP image".into()),
        Format::Text | Format::Markdown | Format::Html | Format::DocAi | Format::Csv | Format::Tsv => {
            let body = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
            if let Some(magic) = BINARY_MAGIC.iter().find(|m| body.starts_with(m)) {
                return Err(format!("the file is binary (it starts with {:?}), not text", String::from_utf8_lossy(magic)));
            }
            if body.contains(&0) {
                return Err("the file holds NUL bytes: it is binary, not text".into());
            }
            // The head may end inside a character: only a real error counts.
            if let Err(e) = std::str::from_utf8(body) {
                if e.error_len().is_some() {
                    return Err(format!("the file is not UTF-8 text (invalid byte at {})", e.valid_up_to()));
                }
            }
            if format == Format::DocAi && !body.trim_ascii_start().starts_with(b"{") {
                return Err("the file is not a JSON object, as Document AI output is".into());
            }
            Ok(())
        }
    }
}

/// Parses one document, without OCR.
pub fn parse(bytes: &[u8], content_type: &str, filename: &str, limits: &Limits) -> Result<ParsedDocument, ParseError> {
    parse_with_ocr(bytes, content_type, filename, limits, None)
}

/// Parses one document; PDF pages without a text layer go through `ocr`
/// when one is given.
pub fn parse_with_ocr(
    bytes: &[u8],
    content_type: &str,
    filename: &str,
    limits: &Limits,
    ocr: Option<&dyn PageOcr>,
) -> Result<ParsedDocument, ParseError> {
    if bytes.len() as u64 > limits.max_bytes {
        return Err(ParseError::TooLarge { size: bytes.len() as u64, limit: limits.max_bytes });
    }
    if bytes.is_empty() {
        return Err(ParseError::Empty);
    }
    let format = detect_format(content_type, filename)
        .ok_or_else(|| ParseError::UnsupportedContentType { content_type: content_type.to_string(), filename: filename.to_string() })?;
    let mut budget = OutputBudget::new(limits, bytes.len());
    // A presentation's slides whose only content is one picture, and its part.
    let mut slide_pictures: Vec<(u32, String)> = Vec::new();
    let (blocks, page_count, pages) = match format {
        Format::Text | Format::Markdown => (vec![Block::new(0, utf8(bytes)?)], 1, Vec::new()),
        Format::Html => (html::blocks(utf8(bytes)?, &mut budget)?, 1, Vec::new()),
        Format::Pdf => pdf::blocks(bytes, limits, &mut budget)?,
        Format::Docx => {
            let (b, n) = docx::blocks(bytes, limits, &mut budget)?;
            (b, n, Vec::new())
        }
        Format::Pptx | Format::Odp => {
            let deck = slides::blocks(format, bytes, limits, &mut budget)?;
            slide_pictures = deck.pictures;
            (deck.blocks, deck.slides, Vec::new())
        }
        Format::DocAi => docai::blocks(utf8(bytes)?, &mut budget)?,
        Format::Csv | Format::Tsv | Format::Xlsx | Format::Xls | Format::Ods => {
            let (b, n) = sheet::blocks(format, bytes, filename, limits, &mut budget)?;
            (b, n, Vec::new())
        }
        // Headers only: text comes from OCR below, page by page.
        Format::Png | Format::Jpeg | Format::Tiff | Format::Webp => {
            let sizes = raster::pages(format, bytes, limits)?;
            (Vec::new(), sizes.len() as u32, sizes)
        }
    };
    if page_count > limits.max_pages {
        return Err(ParseError::TooManyPages { pages: page_count.into(), limit: limits.max_pages });
    }
    let (mut blocks, mut ocr_pages, mut ocr_failures) = (blocks, Vec::new(), Vec::new());
    // The first image page that could not be decoded: the document's
    // failure if no page has text.
    let mut undecodable: Option<ParseError> = None;
    if let (Format::Pdf | Format::Png | Format::Jpeg | Format::Tiff | Format::Webp | Format::Pptx | Format::Odp, Some(ocr)) = (format, ocr)
    {
        let with_text: std::collections::HashSet<u32> = blocks.iter().filter(|b| !b.text.trim().is_empty()).map(|b| b.page_idx).collect();
        // A page without text is read; of a presentation, a slide that is
        // one picture.
        let wanted: Vec<u32> = if format.is_presentation() {
            slide_pictures.iter().map(|(p, _)| *p).collect()
        } else {
            (0..page_count).filter(|p| !with_text.contains(p)).collect()
        };
        // OCR is the costliest step (a process pair per page): bounded in
        // pages and in time per document, so a PDF of thousands of blank
        // pages cannot hold a parser for hours.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(limits.ocr_budget_secs);
        let (mut tried, mut refused) = (0u32, None::<String>);
        for page in wanted {
            if refused.is_none() && tried >= limits.ocr_max_pages {
                refused = Some(format!("not read: OCR reads at most {} pages of a document", limits.ocr_max_pages));
            }
            if refused.is_none() && std::time::Instant::now() >= deadline {
                refused = Some(format!("not read: the document's OCR time budget ({} s) is spent", limits.ocr_budget_secs));
            }
            if let Some(why) = &refused {
                ocr_failures.push((page, why.clone()));
                continue;
            }
            tried += 1;
            let words = match format {
                // A page that cannot be decoded (a TIFF page whose strips are
                // broken) is left without text, its reason in ocr_failures,
                // as a PDF page OCR cannot read: the other pages stay.
                Format::Png | Format::Jpeg | Format::Tiff | Format::Webp => match raster::page_gray(bytes, page, limits) {
                    Ok(grey) => ocr.recognize_image(&grey),
                    Err(e) => {
                        ocr_failures.push((page, e.to_string()));
                        undecodable.get_or_insert(e);
                        continue;
                    }
                },
                // A slide's picture is read as an image file is (its header,
                // pixel and byte limits, its orientation); its words keep
                // no boxes: they would be in the picture's pixels, not on
                // the slide, which has no geometry.
                Format::Pptx | Format::Odp => {
                    let part = slide_pictures.iter().find(|(p, _)| *p == page).map(|(_, part)| part.as_str()).unwrap_or_default();
                    match slides::picture(bytes, limits, part).and_then(|picture| raster::page_gray(&picture, 0, limits)) {
                        Ok(grey) => ocr.recognize_image(&grey).map(OcrPage::without_boxes),
                        Err(e) => {
                            ocr_failures.push((page, format!("the slide's picture {part}: {e}")));
                            continue;
                        }
                    }
                }
                _ => ocr.recognize(bytes, page, pages.iter().find(|s| s.page_idx == page)),
            };
            match words {
                Ok(words) if !words.is_blank() => {
                    let block = words.block(page);
                    budget.take(block.text.chars().count())?;
                    // Before the page's other blocks (a slide's notes).
                    blocks.insert(blocks.partition_point(|b| b.page_idx < page), block);
                    ocr_pages.push(page);
                }
                Ok(_) => {}
                Err(e) => ocr_failures.push((page, e.to_string())),
            }
        }
        // Stable: a page's own blocks keep their order.
        blocks.sort_by_key(|b| b.page_idx);
    }
    let (full_text, mut segments) = segments::assemble(&blocks, limits.max_segment_chars);
    // A slide is a section of its own: chunks stay within one.
    segments.iter_mut().for_each(|s| s.slide = format.is_presentation());
    let mut pages_without_text: Vec<u32> = (0..page_count).filter(|p| !segments.iter().any(|s| s.page_idx == *p)).collect();
    if segments.is_empty() {
        // An image none of whose pages has text, one of them broken: that
        // is why (a truncated PNG is corrupt_image, not no_text).
        if let Some(e) = undecodable {
            return Err(e);
        }
        return Err(ParseError::NoText(match format {
            Format::Pdf if ocr.is_some() => format!("{page_count} page(s) without a text layer, and OCR found no text"),
            Format::Pdf => format!("{page_count} page(s) without a text layer (OCR is not available)"),
            Format::Png | Format::Jpeg | Format::Tiff | Format::Webp if ocr.is_some() => {
                format!("{page_count} image page(s), and OCR found no text")
            }
            Format::Png | Format::Jpeg | Format::Tiff | Format::Webp => {
                format!("{page_count} image page(s): an image is read by OCR, which is not available")
            }
            Format::Csv | Format::Tsv | Format::Xlsx | Format::Xls | Format::Ods => {
                format!("{page_count} sheet(s), none with a non-empty cell")
            }
            Format::Pptx | Format::Odp if ocr.is_some() => {
                format!("{page_count} slide(s), none with text (a slide's pictures are read only when one picture is all it shows)")
            }
            Format::Pptx | Format::Odp => {
                format!("{page_count} slide(s), none with text (text in pictures is read by OCR, which is not available)")
            }
            _ => "the document holds only whitespace or markup".to_string(),
        }));
    }
    pages_without_text.dedup();
    ocr_pages.retain(|p| !pages_without_text.contains(p));
    ocr_failures.retain(|(p, _)| pages_without_text.contains(p));
    Ok(ParsedDocument { format, full_text, segments, page_count, pages_without_text, ocr_pages, ocr_failures, pages })
}

fn utf8(bytes: &[u8]) -> Result<&str, ParseError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|e| ParseError::InvalidUtf8(e.valid_up_to()))
}

#[cfg(test)]
mod tests;
