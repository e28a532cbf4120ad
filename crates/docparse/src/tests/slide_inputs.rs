//! Presentations written by the tests themselves, and their poison
//! versions: PPTX and ODP as the zip archives they are (the parts a
//! presentation program writes that hold text: the package relationships,
//! `presentation.xml` with its `sldIdLst`, the slides, their notes pages),
//! a password-protected PPTX as the OLE compound file it is. The unit tests
//! of `rag-docparse` parse them; the integration tests of `rag-engine`
//! (which include this file by path, next to `sheet_inputs.rs`) upload
//! them. Only `std` and `zip`, so both can compile it. The PPTX writer is
//! in `slide_inputs_pptx.rs`, this module's child; the ODP writer is here.

#![allow(dead_code)]

use std::io::Write;

/// One shape of a slide, in the order of the slide's shape tree.
#[derive(Debug, Clone)]
pub enum Shape<'a> {
    /// The title placeholder.
    Title(&'a str),
    /// A body placeholder, one paragraph per item.
    Body(Vec<&'a str>),
    /// A text box (no placeholder).
    TextBox(&'a str),
    /// A table, its first row the header.
    Table(Vec<Vec<&'a str>>),
    /// The slide-number placeholder (chrome, not content).
    SlideNumber(&'a str),
    /// A picture: no text (its relationship leads nowhere: no media part).
    Picture,
    /// A picture stored in the package: these PNG bytes.
    Image(&'a [u8]),
    /// Shapes grouped.
    Group(Vec<Shape<'a>>),
}

/// One slide: its shapes and its speaker notes (paragraphs).
#[derive(Debug, Clone, Default)]
pub struct Slide<'a> {
    pub shapes: Vec<Shape<'a>>,
    pub notes: Vec<&'a str>,
}

/// The parts of a package: names and contents.
pub type Parts = Vec<(String, Vec<u8>)>;

pub const PPTX: &str = "application/vnd.openxmlformats-officedocument.presentationml.presentation";
pub const ODP: &str = "application/vnd.oasis.opendocument.presentation";

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn zip_of(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, body) in entries {
        let options =
            zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated).compression_level(Some(9));
        zip.start_file(name.as_str(), options).expect("in memory");
        zip.write_all(body).expect("in memory");
    }
    zip.finish().expect("in memory").into_inner()
}

/// A slide's pictures stored in the package: relationship id, and bytes.
type Media = Vec<(String, Vec<u8>)>;

// `pptx`, `pptx_parts`, `pptx_in_parts`, `pptx_bomb`, `truncated_pptx`,
// `pictures_only_pptx`, `encrypted_pptx`: a glob, as each includer uses
// some of them only.
#[path = "slide_inputs_pptx.rs"]
mod pptx_writer;
pub use pptx_writer::*;

/// An ODP with these slides (tables, titles, notes as an ODP writes them).
pub fn odp(slides: &[Slide<'_>]) -> Vec<u8> {
    fn paras(items: &[&str]) -> String {
        items.iter().map(|p| format!("<text:p>{}</text:p>", escape(p).replace('\n', "<text:line-break/>"))).collect()
    }
    fn frame(class: Option<&str>, inner: &str) -> String {
        let class = class.map(|c| format!(r#" presentation:class="{c}""#)).unwrap_or_default();
        format!(r#"<draw:frame{class} svg:width="20cm" svg:height="3cm"><draw:text-box>{inner}</draw:text-box></draw:frame>"#)
    }
    fn shape(s: &Shape<'_>, media: &mut Media) -> String {
        match s {
            Shape::Image(png) => {
                let name = format!("Pictures/{}.png", media.len() + 1);
                media.push((name.clone(), png.to_vec()));
                format!(r#"<draw:frame presentation:class="graphic"><draw:image xlink:href="{name}" xlink:type="simple"/></draw:frame>"#)
            }
            Shape::Title(t) => frame(Some("title"), &paras(&[t])),
            Shape::Body(items) => frame(Some("outline"), &paras(items)),
            Shape::TextBox(t) => frame(None, &paras(&[t])),
            Shape::SlideNumber(n) => frame(Some("page-number"), &paras(&[n])),
            Shape::Picture => {
                r#"<draw:frame><draw:image xlink:href="Pictures/missing.png"/><svg:title>a chart</svg:title></draw:frame>"#.into()
            }
            Shape::Table(rows) => {
                let body: String = rows
                    .iter()
                    .map(|r| {
                        let cells: String = r.iter().map(|c| format!("<table:table-cell>{}</table:table-cell>", paras(&[c]))).collect();
                        format!("<table:table-row>{cells}</table:table-row>")
                    })
                    .collect();
                format!(
                    r#"<draw:frame><table:table><table:table-column table:number-columns-repeated="3"/>{body}</table:table></draw:frame>"#
                )
            }
            Shape::Group(shapes) => format!("<draw:g>{}</draw:g>", shapes.iter().map(|s| shape(s, media)).collect::<String>()),
        }
    }
    let mut media = Media::new();
    let pages: String = slides
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let notes = if s.notes.is_empty() {
                String::new()
            } else {
                format!(
                    r#"<presentation:notes><draw:page-thumbnail draw:page-number="{}"/>{}</presentation:notes>"#,
                    i + 1,
                    frame(Some("notes"), &paras(&s.notes))
                )
            };
            format!(
                r#"<draw:page draw:name="page{}">{}{notes}</draw:page>"#,
                i + 1,
                s.shapes.iter().map(|s| shape(s, &mut media)).collect::<String>()
            )
        })
        .collect();
    let content = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" xmlns:xlink="http://www.w3.org/1999/xlink" office:version="1.3"><office:body><office:presentation>{pages}</office:presentation></office:body></office:document-content>"#
    );
    let manifest = r#"<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.presentation"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>"#;
    let mut parts = vec![
        ("mimetype".into(), ODP.as_bytes().to_vec()),
        ("content.xml".into(), content.into_bytes()),
        ("META-INF/manifest.xml".into(), manifest.as_bytes().to_vec()),
    ];
    parts.extend(media);
    zip_of(&parts)
}

/// The deck the tests ask about: three slides stored out of name order,
/// the title after the body in the first slide's shape tree, a table, a
/// group, notes.
pub fn sales_deck() -> Vec<Slide<'static>> {
    vec![
        Slide {
            shapes: vec![
                Shape::Body(vec!["Doanh thu quý 3 tăng 18% so với cùng kỳ.", "Khách hàng mới: 1.240 doanh nghiệp."]),
                Shape::Title("Kết quả kinh doanh quý 3"),
                Shape::SlideNumber("1"),
            ],
            notes: vec!["Nhấn mạnh khách hàng doanh nghiệp ở miền Trung."],
        },
        Slide {
            shapes: vec![
                Shape::Title("Doanh thu theo khu vực"),
                Shape::Table(vec![
                    vec!["Khu vực", "Doanh thu (tỷ đồng)", "Tăng trưởng"],
                    vec!["Miền Bắc", "412,5", "12%"],
                    vec!["Miền Nam", "538,1", "21%"],
                ]),
                Shape::Picture,
            ],
            notes: vec![],
        },
        Slide {
            shapes: vec![
                Shape::Group(vec![Shape::TextBox("Kế hoạch quý 4"), Shape::TextBox("Mở văn phòng tại Đà Nẵng vào tháng 11.")]),
                Shape::Title("Kế hoạch"),
            ],
            notes: vec!["Ngân sách văn phòng Đà Nẵng: 3,2 tỷ đồng.", "Người phụ trách: chị Lan."],
        },
    ]
}
