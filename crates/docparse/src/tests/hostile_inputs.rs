//! Hostile inputs, generated small: each is an upload that once took a
//! parser (and with it the whole process) down, or could have. The unit
//! tests of `rag-docparse` parse them in process; the integration tests of
//! `rag-engine` (which include this file by path) upload them to a running
//! pipeline. Only `std`, `flate2` and `zip`, so both can compile it.

#![allow(dead_code)]

use std::io::Write;

/// `depth` nested `<span>` elements around one word, then a paragraph: the
/// 2.5 MB file of 200,000 that overflowed the parser's stack.
pub fn nested_html(depth: usize) -> Vec<u8> {
    let mut s = String::with_capacity(depth * 13 + 64);
    s.push_str("<html><body>");
    for _ in 0..depth {
        s.push_str("<span>");
    }
    s.push_str("deep");
    for _ in 0..depth {
        s.push_str("</span>");
    }
    s.push_str("<p>after the nesting</p></body></html>");
    s.into_bytes()
}

/// A PDF from its objects (numbered from 1, the catalog first), with a
/// correct cross-reference table.
pub fn pdf(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).as_bytes());
    out
}

fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut v = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    v.extend_from_slice(data);
    v.extend_from_slice(b"\nendstream");
    v
}

const FONT: &str = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>";

/// One page with a line of text and a form XObject that draws itself: the
/// 816-byte PDF that recursed without end in pdf-extract.
pub fn self_drawing_form_pdf() -> Vec<u8> {
    pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
           /Resources << /Font << /F1 6 0 R >> /XObject << /X1 5 0 R >> >> >>"
            .to_vec(),
        stream("", b"BT /F1 12 Tf 72 720 Td (A page that draws a form) Tj ET /X1 Do"),
        stream("/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /XObject << /X1 5 0 R >> >>", b"/X1 Do /X1 Do"),
        FONT.as_bytes().to_vec(),
    ])
}

/// `pages` pages that draw nothing (a scan without its images): each one
/// goes to OCR.
pub fn blank_pages_pdf(pages: usize) -> Vec<u8> {
    let mut objects = vec![b"<< /Type /Catalog /Pages 2 0 R >>".to_vec()];
    let kids: Vec<String> = (0..pages).map(|i| format!("{} 0 R", i + 4)).collect();
    objects.push(format!("<< /Type /Pages /Kids [{}] /Count {pages} >>", kids.join(" ")).into_bytes());
    objects.push(stream("", b""));
    for _ in 0..pages {
        objects.push(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R >>".to_vec());
    }
    pdf(&objects)
}

/// One page of `inches` × `inches` with a line of text (a page image at
/// screen resolution would be tens of thousands of pixels a side).
pub fn huge_page_pdf(inches: u32) -> Vec<u8> {
    let side = inches * 72;
    pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        format!("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {side} {side}] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>")
            .into_bytes(),
        stream("", format!("BT /F1 12 Tf 72 {} Td (A very large page) Tj ET", side - 72).as_bytes()),
        FONT.as_bytes().to_vec(),
    ])
}

/// A page whose content stream inflates to `inflated` bytes of spaces
/// (compressed ~1000:1).
pub fn flate_bomb_pdf(inflated: usize) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let chunk = vec![b' '; 1 << 20];
    let mut left = inflated;
    while left > 0 {
        let n = left.min(chunk.len());
        z.write_all(&chunk[..n]).expect("in memory");
        left -= n;
    }
    let data = z.finish().expect("in memory");
    pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>".to_vec(),
        stream("/Filter /FlateDecode", &data),
    ])
}

/// Document AI JSON whose `paragraphs` paragraphs (and as many tokens)
/// each anchor the whole text of `text_chars` characters.
pub fn docai_overlapping_anchors(paragraphs: usize, text_chars: usize) -> Vec<u8> {
    let text = "Lorem ipsum dolor sit amet. ".repeat(text_chars / 28 + 1);
    let text: String = text.chars().take(text_chars).collect();
    let anchor = format!(r#"{{"layout":{{"textAnchor":{{"textSegments":[{{"startIndex":"0","endIndex":"{text_chars}"}}]}}}}}}"#);
    let many = vec![anchor.as_str(); paragraphs].join(",");
    format!(r#"{{"text":{},"pages":[{{"pageNumber":1,"paragraphs":[{many}],"tokens":[{many}]}}]}}"#, serde_json_string(&text)).into_bytes()
}

fn serde_json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A DOCX whose `word/document.xml` inflates to about `inflated` bytes but
/// whose zip headers declare it 100 bytes long.
pub fn lying_docx(inflated: usize) -> Vec<u8> {
    let para = "<w:p><w:r><w:t>lie</w:t></w:r></w:p>";
    let body = para.repeat(inflated / para.len() + 1);
    let xml = format!(
        r#"<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>"#
    );
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut buf);
        // The best compression: the ratio must not depend on which
        // deflate backend flate2 was built with (zlib-rs makes this 45 KB
        // at the default level, miniz_oxide less).
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated).compression_level(Some(9));
        z.start_file("word/document.xml", opts).expect("in memory");
        z.write_all(xml.as_bytes()).expect("in memory");
        z.finish().expect("in memory");
    }
    let mut bytes = buf.into_inner();
    // Uncompressed size: offset 22 of the local header, 24 of the central
    // directory entry.
    let lie = 100u32.to_le_bytes();
    for (sig, at) in [(b"PK\x03\x04", 22usize), (b"PK\x01\x02", 24)] {
        if let Some(p) = bytes.windows(4).position(|w| w == sig) {
            bytes[p + at..p + at + 4].copy_from_slice(&lie);
        }
    }
    bytes
}
