//! The chaos corpus: every format the parser reads, a few files that must
//! fail (documents marked failed with a reason), and undecodable records
//! (poison: dead-lettered). Deterministic for a given size.

use std::io::Write;

/// What a file must end as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    Ingested,
    Failed,
    /// Deleted by its user (the soak): its rows purged from search.
    Deleted,
}

pub struct CorpusFile {
    pub name: String,
    pub bytes: Vec<u8>,
    pub expect: Expect,
}

const PDF_FIXTURE: &[u8] = include_bytes!("../../../docparse/tests/fixtures/bao-cao-tai-chinh-2023.pdf");

fn docx(paragraphs: &[String]) -> Vec<u8> {
    let body: String = paragraphs.iter().map(|p| format!("<w:p><w:r><w:t>{p}</w:t></w:r></w:p>")).collect();
    let xml = format!(
        r#"<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>"#
    );
    let mut buf = std::io::Cursor::new(Vec::new());
    let mut z = zip::ZipWriter::new(&mut buf);
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    // Writing to memory cannot fail.
    let _ = z.start_file("word/document.xml", opts).and_then(|()| z.write_all(xml.as_bytes()).map_err(Into::into));
    let _ = z.finish();
    buf.into_inner()
}

fn sentence(i: usize, k: usize) -> String {
    const TOPICS: [&str; 6] = ["doanh thu", "chi phí vận chuyển", "badge office", "parking level", "cổ tức", "expense reports"];
    format!("Tài liệu {i}, đoạn {k}: {} thay đổi {}% trong quý {}.", TOPICS[(i + k) % TOPICS.len()], (i * 7 + k) % 40, k % 4 + 1)
}

/// `n` files; about one in twenty must fail.
pub fn files(n: usize) -> Vec<CorpusFile> {
    (0..n)
        .map(|i| {
            let paras: Vec<String> = (0..3 + i % 4).map(|k| sentence(i, k)).collect();
            let (ext, bytes, expect) = if i % 20 == 19 {
                ("pdf", b"%PDF-1.7\nnot a pdf body".to_vec(), Expect::Failed)
            } else {
                match i % 6 {
                    0 => ("txt", paras.join("\n\n").into_bytes(), Expect::Ingested),
                    1 => ("md", format!("# Doc {i}\n\n{}", paras.join("\n\n")).into_bytes(), Expect::Ingested),
                    2 => {
                        let body: String = paras.iter().map(|p| format!("<p>{p}</p>")).collect();
                        ("html", format!("<html><body><h1>Doc {i}</h1>{body}</body></html>").into_bytes(), Expect::Ingested)
                    }
                    3 => ("docx", docx(&paras), Expect::Ingested),
                    4 => {
                        let text = format!("{}\n", paras.join("\n"));
                        let mut start = 0usize;
                        let segments: Vec<serde_json::Value> = paras
                            .iter()
                            .map(|p| {
                                let end = start + p.chars().count() + 1;
                                let v = serde_json::json!({"layout": {"textAnchor": {"textSegments": [{"startIndex": start.to_string(), "endIndex": end.to_string()}]}}});
                                start = end;
                                v
                            })
                            .collect();
                        let doc = serde_json::json!({"text": text, "pages": [{"paragraphs": segments}]});
                        ("json", doc.to_string().into_bytes(), Expect::Ingested)
                    }
                    _ => ("pdf", PDF_FIXTURE.to_vec(), Expect::Ingested),
                }
            };
            CorpusFile { name: format!("doc-{i:05}.{ext}"), bytes, expect }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_has_every_format_and_some_failures() {
        let files = files(40);
        for ext in ["txt", "md", "html", "docx", "json", "pdf"] {
            assert!(files.iter().any(|f| f.name.ends_with(ext) && f.expect == Expect::Ingested), "{ext}");
        }
        assert_eq!(files.iter().filter(|f| f.expect == Expect::Failed).count(), 2);
        let names: std::collections::HashSet<_> = files.iter().map(|f| &f.name).collect();
        assert_eq!(names.len(), 40);
    }
}
