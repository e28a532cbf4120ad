//! The formats the parser reads, and how an upload's declared type and
//! filename name one.

use serde::{Deserialize, Serialize};

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

    /// Whether the format has no pages of its own (text, Markdown, a web
    /// page): its one "page" is never named to a reader.
    pub fn is_pageless(self) -> bool {
        matches!(self, Format::Text | Format::Markdown | Format::Html)
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
