//! Spreadsheets written by the tests themselves, and their poison versions:
//! XLSX and ODS as the zip archives they are, XLS and a password-protected
//! XLSX as the OLE compound files they are. The unit tests of
//! `rag-docparse` parse them; the integration tests of `rag-engine` (which
//! include this file by path) upload them. Only `std` and `zip`, so both
//! can compile it.

#![allow(dead_code)]

use std::io::Write;

/// One cell as a test writes it.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    Text(&'a str),
    Number(f64),
    /// An Excel serial date (days since 1899-12-30), shown as a date.
    Date(f64),
    /// A fraction shown as a percentage with one decimal (`0.0%`; XLSX only,
    /// a plain number elsewhere).
    Percent(f64),
    /// A serial date shown day first (`dd/mm/yyyy`, a format of the file's
    /// own; XLSX only, a date or a number elsewhere).
    DayFirst(f64),
    /// A formula and the value the file caches for it.
    Formula(&'a str, f64),
    Empty,
}

pub type Sheet<'a> = (&'a str, Vec<Vec<Value<'a>>>);

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn column(mut col: usize) -> String {
    let mut letters = Vec::new();
    col += 1;
    while col > 0 {
        letters.push(b'A' + ((col - 1) % 26) as u8);
        col = (col - 1) / 26;
    }
    letters.iter().rev().map(|b| *b as char).collect()
}

fn zip_of(entries: &[(&str, Vec<u8>)], stored_first: bool) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (i, (name, body)) in entries.iter().enumerate() {
        let method = if stored_first && i == 0 { zip::CompressionMethod::Stored } else { zip::CompressionMethod::Deflated };
        zip.start_file(*name, zip::write::SimpleFileOptions::default().compression_method(method)).expect("in memory");
        zip.write_all(body).expect("in memory");
    }
    zip.finish().expect("in memory").into_inner()
}

/// The XML of one worksheet: cells in A1 positions from A1, strings
/// inline, dates with the built-in date format (style 1).
fn sheet_xml(rows: &[Vec<Value<'_>>]) -> String {
    let mut x = String::from(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>"#,
    );
    for (r, row) in rows.iter().enumerate() {
        x.push_str(&format!(r#"<row r="{}">"#, r + 1));
        for (c, v) in row.iter().enumerate() {
            let at = format!("{}{}", column(c), r + 1);
            match v {
                Value::Text(t) => x.push_str(&format!(r#"<c r="{at}" t="inlineStr"><is><t>{}</t></is></c>"#, escape(t))),
                Value::Number(n) => x.push_str(&format!(r#"<c r="{at}"><v>{n}</v></c>"#)),
                Value::Date(d) => x.push_str(&format!(r#"<c r="{at}" s="1"><v>{d}</v></c>"#)),
                Value::Percent(p) => x.push_str(&format!(r#"<c r="{at}" s="2"><v>{p}</v></c>"#)),
                Value::DayFirst(d) => x.push_str(&format!(r#"<c r="{at}" s="3"><v>{d}</v></c>"#)),
                Value::Formula(f, cached) => x.push_str(&format!(r#"<c r="{at}"><f>{}</f><v>{cached}</v></c>"#, escape(f))),
                Value::Empty => {}
            }
        }
        x.push_str("</row>");
    }
    x.push_str("</sheetData></worksheet>");
    x
}

/// The parts of an XLSX workbook with these sheets, the sheet XML of each
/// given as is (for poison versions).
fn xlsx_parts(names: &[&str], sheets_xml: Vec<Vec<u8>>) -> Vec<(String, Vec<u8>)> {
    let mut types = String::from(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>"#,
    );
    let mut book = String::from(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>"#,
    );
    let mut rels = String::from(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rIdStyles" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>"#,
    );
    for (i, name) in names.iter().enumerate() {
        let n = i + 1;
        types.push_str(&format!(
            r#"<Override PartName="/xl/worksheets/sheet{n}.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>"#
        ));
        book.push_str(&format!(r#"<sheet name="{}" sheetId="{n}" r:id="rId{n}"/>"#, escape(name)));
        rels.push_str(&format!(
            r#"<Relationship Id="rId{n}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet{n}.xml"/>"#
        ));
    }
    types.push_str("</Types>");
    book.push_str("</sheets></workbook>");
    rels.push_str("</Relationships>");
    let styles = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><numFmts count="2"><numFmt numFmtId="164" formatCode="dd/mm/yyyy"/><numFmt numFmtId="165" formatCode="0.0%"/></numFmts><cellXfs count="4"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/><xf numFmtId="14" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/><xf numFmtId="165" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/><xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/></cellXfs></styleSheet>"#;
    let mut parts = vec![
        ("[Content_Types].xml".to_string(), types.into_bytes()),
        ("_rels/.rels".to_string(), br#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#.to_vec()),
        ("xl/workbook.xml".to_string(), book.into_bytes()),
        ("xl/_rels/workbook.xml.rels".to_string(), rels.into_bytes()),
        ("xl/styles.xml".to_string(), styles.as_bytes().to_vec()),
    ];
    for (i, xml) in sheets_xml.into_iter().enumerate() {
        parts.push((format!("xl/worksheets/sheet{}.xml", i + 1), xml));
    }
    parts
}

fn zip_parts(parts: Vec<(String, Vec<u8>)>) -> Vec<u8> {
    let refs: Vec<(&str, Vec<u8>)> = parts.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    zip_of(&refs, false)
}

/// An XLSX workbook with these sheets.
pub fn xlsx(sheets: &[Sheet<'_>]) -> Vec<u8> {
    let names: Vec<&str> = sheets.iter().map(|(n, _)| *n).collect();
    zip_parts(xlsx_parts(&names, sheets.iter().map(|(_, rows)| sheet_xml(rows).into_bytes()).collect()))
}

/// An XLSX whose one sheet inflates to `inflated` bytes: a small table,
/// then spaces (XML allows them between rows), compressed about 1000:1.
pub fn xlsx_bomb(inflated: usize) -> Vec<u8> {
    let rows = vec![vec![Value::Text("Chỉ tiêu"), Value::Text("2023")], vec![Value::Text("Doanh thu"), Value::Number(1.0)]];
    let xml = sheet_xml(&rows);
    let at = xml.find("</sheetData>").expect("written above");
    let mut body = xml.as_bytes()[..at].to_vec();
    body.resize(body.len() + inflated, b' ');
    body.extend_from_slice(&xml.as_bytes()[at..]);
    zip_parts(xlsx_parts(&["Bomb"], vec![body]))
}

/// An XLSX cut in the middle: the end of its archive (the central
/// directory) is missing.
pub fn truncated_xlsx() -> Vec<u8> {
    let whole = xlsx(&[("S", vec![vec![Value::Text("a"), Value::Text("b")], vec![Value::Number(1.0), Value::Number(2.0)]])]);
    whole[..whole.len() / 2].to_vec()
}

/// An ODS workbook with these sheets (dates as ISO dates).
pub fn ods(sheets: &[Sheet<'_>]) -> Vec<u8> {
    let mut x = String::from(
        r#"<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2"><office:body><office:spreadsheet>"#,
    );
    for (name, rows) in sheets {
        x.push_str(&format!(r#"<table:table table:name="{}">"#, escape(name)));
        for row in rows {
            x.push_str("<table:table-row>");
            for v in row {
                match v {
                    Value::Text(t) => x.push_str(&format!(r#"<table:table-cell office:value-type="string"><text:p>{}</text:p></table:table-cell>"#, escape(t))),
                    Value::Number(n) | Value::Percent(n) => x.push_str(&format!(
                        r#"<table:table-cell office:value-type="float" office:value="{n}"><text:p>{n}</text:p></table:table-cell>"#
                    )),
                    Value::Date(d) | Value::DayFirst(d) => {
                        // Serial days to an ISO date (the civil-from-days algorithm).
                        let z = *d as i64 - 25_569 + 719_468;
                        let era = z.div_euclid(146_097);
                        let doe = z - era * 146_097;
                        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
                        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
                        let mp = (5 * doy + 2) / 153;
                        let day = doy - (153 * mp + 2) / 5 + 1;
                        let month = if mp < 10 { mp + 3 } else { mp - 9 };
                        let year = yoe + era * 400 + i64::from(month <= 2);
                        let iso = format!("{year:04}-{month:02}-{day:02}");
                        x.push_str(&format!(
                            r#"<table:table-cell office:value-type="date" office:date-value="{iso}"><text:p>{iso}</text:p></table:table-cell>"#
                        ));
                    }
                    Value::Formula(f, cached) => x.push_str(&format!(
                        r#"<table:table-cell table:formula="of:={}" office:value-type="float" office:value="{cached}"><text:p>{cached}</text:p></table:table-cell>"#,
                        escape(f)
                    )),
                    Value::Empty => x.push_str("<table:table-cell/>"),
                }
            }
            x.push_str("</table:table-row>");
        }
        x.push_str("</table:table>");
    }
    x.push_str("</office:spreadsheet></office:body></office:document-content>");
    let manifest = r#"<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>"#;
    zip_of(
        &[
            ("mimetype", b"application/vnd.oasis.opendocument.spreadsheet".to_vec()),
            ("META-INF/manifest.xml", manifest.as_bytes().to_vec()),
            ("content.xml", x.into_bytes()),
        ],
        true,
    )
}

const ENDOFCHAIN: u32 = 0xFFFF_FFFE;
const FREESECT: u32 = 0xFFFF_FFFF;
const FATSECT: u32 = 0xFFFF_FFFD;
const NOSTREAM: u32 = 0xFFFF_FFFF;

/// An OLE compound file (version 3, 512-byte sectors) holding these
/// streams, each padded to 4096 bytes so that none lives in the mini
/// stream: sector 0 is the FAT, sector 1 the directory, then the streams.
pub fn compound_file(streams: &[(&str, Vec<u8>)]) -> Vec<u8> {
    assert!(streams.len() <= 3, "one directory sector holds the root and three streams");
    let mut data: Vec<(Vec<u8>, u32)> = Vec::new();
    let mut fat: Vec<u32> = vec![FATSECT, ENDOFCHAIN];
    for (_, body) in streams {
        let mut body = body.clone();
        if body.len() < 4096 {
            body.resize(4096, 0);
        }
        let start = fat.len() as u32;
        let sectors = body.len().div_ceil(512);
        for i in 0..sectors {
            fat.push(if i + 1 == sectors { ENDOFCHAIN } else { start + i as u32 + 1 });
        }
        body.resize(sectors * 512, 0);
        data.push((body, start));
    }
    assert!(fat.len() <= 128, "one FAT sector");
    fat.resize(128, FREESECT);

    let mut header = Vec::with_capacity(512);
    header.extend_from_slice(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1");
    header.extend_from_slice(&[0; 16]);
    for v in [0x003Eu16, 0x0003, 0xFFFE, 0x0009, 0x0006] {
        header.extend_from_slice(&v.to_le_bytes());
    }
    header.extend_from_slice(&[0; 6]);
    for v in [0u32, 1, 1, 0, 4096, ENDOFCHAIN, 0, ENDOFCHAIN, 0] {
        header.extend_from_slice(&v.to_le_bytes());
    }
    header.extend_from_slice(&0u32.to_le_bytes());
    for _ in 1..109 {
        header.extend_from_slice(&FREESECT.to_le_bytes());
    }
    assert_eq!(header.len(), 512);

    let entry = |name: &str, kind: u8, right: u32, child: u32, start: u32, size: u32| {
        let mut e = vec![0u8; 128];
        let units: Vec<u16> = name.encode_utf16().chain([0]).collect();
        for (i, u) in units.iter().enumerate() {
            e[2 * i..2 * i + 2].copy_from_slice(&u.to_le_bytes());
        }
        e[64..66].copy_from_slice(&((units.len() * 2) as u16).to_le_bytes());
        e[66] = kind;
        e[67] = 1;
        e[68..72].copy_from_slice(&NOSTREAM.to_le_bytes());
        e[72..76].copy_from_slice(&right.to_le_bytes());
        e[76..80].copy_from_slice(&child.to_le_bytes());
        e[116..120].copy_from_slice(&start.to_le_bytes());
        e[120..124].copy_from_slice(&size.to_le_bytes());
        e
    };
    let mut dir = entry("Root Entry", 5, NOSTREAM, if streams.is_empty() { NOSTREAM } else { 1 }, ENDOFCHAIN, 0);
    for (i, ((name, _), (body, start))) in streams.iter().zip(&data).enumerate() {
        let right = if i + 1 < streams.len() { i as u32 + 2 } else { NOSTREAM };
        dir.extend(entry(name, 2, right, NOSTREAM, *start, body.len() as u32));
    }
    while dir.len() < 512 {
        let mut unused = vec![0u8; 128];
        unused[68..80].fill(0xFF);
        dir.extend(unused);
    }

    let mut out = header;
    out.extend(fat.iter().flat_map(|v| v.to_le_bytes()));
    out.extend(dir);
    for (body, _) in data {
        out.extend(body);
    }
    out
}

/// A password-protected XLSX as Office writes one: not a zip archive but
/// an OLE compound file holding `EncryptionInfo` and the encrypted package
/// (here random-looking bytes: without the password they are nothing else).
pub fn encrypted_xlsx() -> Vec<u8> {
    let info = [4u16.to_le_bytes(), 4u16.to_le_bytes()].concat();
    let package: Vec<u8> = (0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    compound_file(&[("EncryptionInfo", info), ("EncryptedPackage", package)])
}

fn record(kind: u16, data: &[u8]) -> Vec<u8> {
    let mut r = kind.to_le_bytes().to_vec();
    r.extend_from_slice(&(data.len() as u16).to_le_bytes());
    r.extend_from_slice(data);
    r
}

/// An XLS (BIFF8) workbook with these sheets: strings as UTF-16 LABEL
/// records, numbers as NUMBER records (no formats: dates and formulas are
/// written as their numbers).
pub fn xls(sheets: &[Sheet<'_>]) -> Vec<u8> {
    let bof =
        |dt: u16| record(0x0809, &[0x0600u16.to_le_bytes(), dt.to_le_bytes(), [0; 2], [0; 2], [0; 2], [0; 2], [0; 2], [0; 2]].concat());
    let eof = record(0x000A, &[]);
    let utf16 = |s: &str| -> Vec<u8> { s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect() };
    let bodies: Vec<Vec<u8>> = sheets
        .iter()
        .map(|(_, rows)| {
            let mut s = bof(0x0010);
            for (r, row) in rows.iter().enumerate() {
                for (c, v) in row.iter().enumerate() {
                    let at = [(r as u16).to_le_bytes(), (c as u16).to_le_bytes(), 0u16.to_le_bytes()].concat();
                    let number = |n: f64| record(0x0203, &[at.clone(), n.to_le_bytes().to_vec()].concat());
                    match v {
                        Value::Text(t) => {
                            let chars = t.encode_utf16().count() as u16;
                            s.extend(record(0x0204, &[at.clone(), chars.to_le_bytes().to_vec(), vec![1], utf16(t)].concat()));
                        }
                        Value::Number(n) | Value::Date(n) | Value::Percent(n) | Value::DayFirst(n) | Value::Formula(_, n) => {
                            s.extend(number(*n))
                        }
                        Value::Empty => {}
                    }
                }
            }
            s.extend(&eof);
            s
        })
        .collect();
    let sheet_record = |pos: u32, name: &str| {
        record(0x0085, &[pos.to_le_bytes().to_vec(), vec![0, 0, name.encode_utf16().count() as u8, 1], utf16(name)].concat())
    };
    let globals_len: usize = bof(0x0005).len() + sheets.iter().map(|(n, _)| sheet_record(0, n).len()).sum::<usize>() + eof.len();
    let mut stream = bof(0x0005);
    let mut pos = globals_len;
    for ((name, _), body) in sheets.iter().zip(&bodies) {
        stream.extend(sheet_record(pos as u32, name));
        pos += body.len();
    }
    stream.extend(&eof);
    for body in bodies {
        stream.extend(body);
    }
    compound_file(&[("Workbook", stream)])
}

/// The financial table the tests ask about: a header of years, a formula
/// with its cached value, a date.
pub fn finance_rows() -> Vec<Vec<Value<'static>>> {
    vec![
        vec![Value::Text("Chỉ tiêu"), Value::Number(2023.0), Value::Number(2024.0), Value::Text("Tổng"), Value::Text("Ngày chốt")],
        vec![Value::Text("Doanh thu"), Value::Number(312.5), Value::Number(351.9), Value::Formula("B2+C2", 664.4), Value::Date(45382.0)],
        vec![Value::Empty, Value::Empty, Value::Empty, Value::Empty, Value::Empty],
        vec![
            Value::Text("Lợi nhuận gộp"),
            Value::Number(87.25),
            Value::Number(96.4),
            Value::Formula("B4+C4", 183.65),
            Value::Date(45382.0),
        ],
    ]
}

/// A CSV of `rows` rows after its header, each about a made-up product.
pub fn long_csv(rows: usize) -> Vec<u8> {
    let mut s = String::from("Mã,Sản phẩm,Số lượng,Đơn giá\n");
    for i in 0..rows {
        s.push_str(&format!("SP{i:05},Sản phẩm số {i},{},{}.5\n", i % 97, 1000 + i));
    }
    s.into_bytes()
}
