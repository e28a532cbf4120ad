//! The PPTX writer of `slide_inputs.rs` (its child module, included there
//! by path so that the crates which include that file by path get this one
//! too): the parts of a PPTX package as PowerPoint writes them, its poison
//! versions, and a password-protected PPTX as the OLE compound file it is.

use super::{escape, zip_of, Media, Parts, Shape, Slide};

const NS: &str = r#"xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main""#;
const REL: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";

fn paragraphs(items: &[&str]) -> String {
    items
        .iter()
        .map(|p| {
            // A line break inside a paragraph is <a:br/> between runs.
            let runs: Vec<String> = p.split('\n').map(|l| format!("<a:r><a:rPr lang=\"vi-VN\"/><a:t>{}</a:t></a:r>", escape(l))).collect();
            format!("<a:p>{}</a:p>", runs.join("<a:br/>"))
        })
        .collect()
}

fn text_shape(id: usize, placeholder: Option<&str>, items: &[&str]) -> String {
    let ph = match placeholder {
        Some("obj") => r#"<p:ph idx="1"/>"#.to_string(),
        Some(t) => format!(r#"<p:ph type="{t}"/>"#),
        None => String::new(),
    };
    format!(
        r#"<p:sp><p:nvSpPr><p:cNvPr id="{id}" name="Shape {id}"/><p:cNvSpPr/><p:nvPr>{ph}</p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:lstStyle/>{}</p:txBody></p:sp>"#,
        paragraphs(items)
    )
}

fn shape_xml(id: &mut usize, shape: &Shape<'_>, media: &mut Media) -> String {
    *id += 1;
    let id = *id;
    match shape {
        Shape::Image(png) => {
            let rid = format!("rIdPic{id}");
            media.push((rid.clone(), png.to_vec()));
            format!(
                r#"<p:pic><p:nvPicPr><p:cNvPr id="{id}" name="Picture {id}"/><p:cNvPicPr/><p:nvPr/></p:nvPicPr><p:blipFill><a:blip r:embed="{rid}"/><a:stretch><a:fillRect/></a:stretch></p:blipFill><p:spPr/></p:pic>"#
            )
        }
        Shape::Title(t) => text_shape(id, Some("title"), &[t]),
        Shape::Body(items) => text_shape(id, Some("obj"), items),
        Shape::TextBox(t) => text_shape(id, None, &[t]),
        Shape::SlideNumber(n) => text_shape(id, Some("sldNum"), &[n]),
        Shape::Picture => format!(
            r#"<p:pic><p:nvPicPr><p:cNvPr id="{id}" name="Picture {id}" descr="a chart"/><p:cNvPicPr/><p:nvPr/></p:nvPicPr><p:blipFill><a:blip r:embed="rIdImg"/></p:blipFill><p:spPr/></p:pic>"#
        ),
        Shape::Table(rows) => {
            let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
            let grid: String = (0..cols).map(|_| r#"<a:gridCol w="2000000"/>"#).collect();
            let body: String = rows
                .iter()
                .map(|row| {
                    let cells: String = row
                        .iter()
                        .map(|c| format!("<a:tc><a:txBody><a:bodyPr/><a:lstStyle/>{}</a:txBody><a:tcPr/></a:tc>", paragraphs(&[c])))
                        .collect();
                    format!(r#"<a:tr h="370840">{cells}</a:tr>"#)
                })
                .collect();
            format!(
                r#"<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="{id}" name="Table {id}"/><p:cNvGraphicFramePr><a:graphicFrameLocks noGrp="1"/></p:cNvGraphicFramePr><p:nvPr/></p:nvGraphicFramePr><p:xfrm><a:off x="0" y="0"/><a:ext cx="6000000" cy="1000000"/></p:xfrm><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table"><a:tbl><a:tblPr firstRow="1" bandRow="1"/><a:tblGrid>{grid}</a:tblGrid>{body}</a:tbl></a:graphicData></a:graphic></p:graphicFrame>"#
            )
        }
        Shape::Group(shapes) => {
            let mut next = id * 10;
            let inner: String = shapes.iter().map(|s| shape_xml(&mut next, s, media)).collect();
            format!(
                r#"<p:grpSp><p:nvGrpSpPr><p:cNvPr id="{id}" name="Group {id}"/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>{inner}</p:grpSp>"#
            )
        }
    }
}

fn sp_tree(inner: &str) -> String {
    format!(
        r#"<p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>{inner}</p:spTree></p:cSld>"#
    )
}

fn slide_xml(slide: &Slide<'_>, media: &mut Media) -> String {
    let mut id = 1;
    let shapes: String = slide.shapes.iter().map(|s| shape_xml(&mut id, s, media)).collect();
    format!(r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:sld {NS}>{}</p:sld>"#, sp_tree(&shapes))
}

/// A notes page as PowerPoint writes one: the slide's image, the notes
/// body and the slide number.
fn notes_xml(notes: &[&str], number: usize) -> String {
    let image = r#"<p:sp><p:nvSpPr><p:cNvPr id="2" name="Slide Image 1"/><p:cNvSpPr><a:spLocks noGrp="1" noRot="1" noChangeAspect="1"/></p:cNvSpPr><p:nvPr><p:ph type="sldImg"/></p:nvPr></p:nvSpPr><p:spPr/></p:sp>"#;
    let body = text_shape(3, Some("body"), notes).replace(r#"<p:ph type="body"/>"#, r#"<p:ph type="body" idx="1"/>"#);
    let number = text_shape(4, Some("sldNum"), &[&number.to_string()]);
    format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:notes {NS}>{}</p:notes>"#,
        sp_tree(&format!("{image}{body}{number}"))
    )
}

fn rels(entries: &[(String, &str, String)]) -> Vec<u8> {
    let mut x = String::from(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">"#,
    );
    for (id, kind, target) in entries {
        x.push_str(&format!(r#"<Relationship Id="{id}" Type="{REL}/{kind}" Target="{target}"/>"#));
    }
    x.push_str("</Relationships>");
    x.into_bytes()
}

/// The parts of a PPTX whose slides, in presentation order, are stored in
/// the parts `ppt/slides/slide{parts[i]}.xml` (so the order of the part
/// names need not be the presentation's), written to the archive in the
/// order of the part numbers.
pub fn pptx_parts(slides: &[Slide<'_>], parts: &[usize]) -> Parts {
    assert_eq!(slides.len(), parts.len());
    let mut types = String::from(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/>"#,
    );
    let mut ids = String::new();
    let mut pres_rels = Vec::new();
    let mut out: Parts = Vec::new();
    let mut stored: Vec<(usize, Parts)> = Vec::new();
    for (i, (slide, part)) in slides.iter().zip(parts).enumerate() {
        let rid = format!("rId{}", i + 10);
        ids.push_str(&format!(r#"<p:sldId id="{}" r:id="{rid}"/>"#, 256 + i));
        pres_rels.push((rid, "slide", format!("slides/slide{part}.xml")));
        types.push_str(&format!(
            r#"<Override PartName="/ppt/slides/slide{part}.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.slide+xml"/>"#
        ));
        let mut media = Media::new();
        let mut files = vec![(format!("ppt/slides/slide{part}.xml"), slide_xml(slide, &mut media).into_bytes())];
        let mut slide_rels = vec![("rId1".to_string(), "slideLayout", "../slideLayouts/slideLayout1.xml".to_string())];
        for (rid, png) in media {
            let name = format!("slide{part}-{rid}.png");
            slide_rels.push((rid, "image", format!("../media/{name}")));
            files.push((format!("ppt/media/{name}"), png));
        }
        if !slide.notes.is_empty() {
            slide_rels.push(("rId2".to_string(), "notesSlide", format!("../notesSlides/notesSlide{part}.xml")));
            files.push((format!("ppt/notesSlides/notesSlide{part}.xml"), notes_xml(&slide.notes, i + 1).into_bytes()));
            types.push_str(&format!(
                r#"<Override PartName="/ppt/notesSlides/notesSlide{part}.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.notesSlide+xml"/>"#
            ));
        }
        files.push((format!("ppt/slides/_rels/slide{part}.xml.rels"), rels(&slide_rels)));
        stored.push((*part, files));
    }
    types.push_str("</Types>");
    out.push(("[Content_Types].xml".into(), types.into_bytes()));
    out.push(("_rels/.rels".into(), rels(&[("rId1".into(), "officeDocument", "ppt/presentation.xml".into())])));
    out.push((
        "ppt/presentation.xml".into(),
        format!(
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:presentation {NS}><p:sldMasterIdLst><p:sldMasterId id="2147483648" r:id="rId1"/></p:sldMasterIdLst><p:sldIdLst>{ids}</p:sldIdLst><p:sldSz cx="12192000" cy="6858000"/><p:notesSz cx="6858000" cy="9144000"/></p:presentation>"#
        )
        .into_bytes(),
    ));
    pres_rels.insert(0, ("rId1".into(), "slideMaster", "slideMasters/slideMaster1.xml".into()));
    out.push(("ppt/_rels/presentation.xml.rels".into(), rels(&pres_rels)));
    stored.sort_by_key(|(part, _)| *part);
    out.extend(stored.into_iter().flat_map(|(_, files)| files));
    out
}

/// A PPTX with these slides, stored as slide1.xml, slide2.xml, ... in order.
pub fn pptx(slides: &[Slide<'_>]) -> Vec<u8> {
    let parts: Vec<usize> = (1..=slides.len()).collect();
    zip_of(&pptx_parts(slides, &parts))
}

/// A PPTX whose slides (in presentation order) are stored in the given
/// part numbers.
pub fn pptx_in_parts(slides: &[Slide<'_>], parts: &[usize]) -> Vec<u8> {
    zip_of(&pptx_parts(slides, parts))
}

/// A PPTX whose one slide's XML inflates to `inflated` bytes: a title,
/// then spaces (XML allows them between shapes), compressed about 1000:1.
pub fn pptx_bomb(inflated: usize) -> Vec<u8> {
    let slide = Slide { shapes: vec![Shape::Title("Bom")], notes: vec![] };
    let mut parts = pptx_parts(&[slide], &[1]);
    for (name, body) in &mut parts {
        if name == "ppt/slides/slide1.xml" {
            let xml = String::from_utf8(std::mem::take(body)).expect("written above");
            let at = xml.find("</p:spTree>").expect("written above");
            body.extend_from_slice(&xml.as_bytes()[..at]);
            body.resize(body.len() + inflated, b' ');
            body.extend_from_slice(&xml.as_bytes()[at..]);
        }
    }
    zip_of(&parts)
}

/// A PPTX cut in the middle: the end of its archive is missing.
pub fn truncated_pptx() -> Vec<u8> {
    let whole = pptx(&[Slide { shapes: vec![Shape::Title("Cắt đôi"), Shape::Body(vec!["một", "hai"])], notes: vec!["ghi chú"] }]);
    whole[..whole.len() / 2].to_vec()
}

/// A PPTX whose slides hold only pictures (and a slide number).
pub fn pictures_only_pptx() -> Vec<u8> {
    pptx(&[
        Slide { shapes: vec![Shape::Picture, Shape::SlideNumber("1")], notes: vec![] },
        Slide { shapes: vec![Shape::Picture], notes: vec![] },
    ])
}

const FATSECT: u32 = 0xFFFF_FFFD;
const ENDOFCHAIN: u32 = 0xFFFF_FFFE;
const FREESECT: u32 = 0xFFFF_FFFF;
const NOSTREAM: u32 = 0xFFFF_FFFF;

/// A password-protected PPTX as Office writes one: not a zip archive but an
/// OLE compound file (version 3, 512-byte sectors) holding
/// `EncryptionInfo` and `EncryptedPackage` (random-looking bytes: without
/// the password they are nothing else).
pub fn encrypted_pptx() -> Vec<u8> {
    let streams: [(&str, Vec<u8>); 2] = [
        ("EncryptionInfo", [4u16.to_le_bytes(), 4u16.to_le_bytes()].concat()),
        ("EncryptedPackage", (0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect()),
    ];
    // Sector 0 the FAT, sector 1 the directory, then each stream.
    let mut fat: Vec<u32> = vec![FATSECT, ENDOFCHAIN];
    let mut data: Vec<(Vec<u8>, u32)> = Vec::new();
    for (_, body) in &streams {
        let mut body = body.clone();
        body.resize(body.len().max(4096).div_ceil(512) * 512, 0);
        let start = fat.len() as u32;
        let sectors = body.len() / 512;
        fat.extend((0..sectors).map(|i| if i + 1 == sectors { ENDOFCHAIN } else { start + i as u32 + 1 }));
        data.push((body, start));
    }
    fat.resize(128, FREESECT);
    let mut out = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1".to_vec();
    out.extend_from_slice(&[0; 16]);
    for v in [0x003Eu16, 0x0003, 0xFFFE, 0x0009, 0x0006] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&[0; 6]);
    for v in [0u32, 1, 1, 0, 4096, ENDOFCHAIN, 0, ENDOFCHAIN, 0, 0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for _ in 1..109 {
        out.extend_from_slice(&FREESECT.to_le_bytes());
    }
    out.extend(fat.iter().flat_map(|v| v.to_le_bytes()));
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
    let mut dir = entry("Root Entry", 5, NOSTREAM, 1, ENDOFCHAIN, 0);
    dir.extend(entry(streams[0].0, 2, 2, NOSTREAM, data[0].1, data[0].0.len() as u32));
    dir.extend(entry(streams[1].0, 2, NOSTREAM, NOSTREAM, data[1].1, data[1].0.len() as u32));
    let mut unused = vec![0u8; 128];
    unused[68..80].fill(0xFF);
    dir.extend(unused);
    out.extend(dir);
    for (body, _) in data {
        out.extend(body);
    }
    out
}
