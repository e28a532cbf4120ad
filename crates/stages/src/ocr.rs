//! OCR of PDF pages without a text layer and of images: poppler's
//! `pdftoppm` renders a PDF page, `tesseract` reads it (Debian:
//! poppler-utils, tesseract-ocr, tesseract-ocr-vie, tesseract-ocr-eng); an
//! image page, decoded and turned upright by the parser, goes to tesseract
//! as a PGM. Both run as child processes with a deadline, in a private
//! temporary directory removed afterwards.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rag_docparse::raster::GrayImage;
use rag_docparse::{OcrError, OcrPage, OcrWord, PageOcr, PageSize, Rect};

/// Longest side of a page rendered for OCR, in pixels: 300 dpi of a
/// 23-inch side. A page declared larger (200 × 200 inches is two numbers
/// in a PDF) is rendered smaller instead of into gigabytes of pixels.
const MAX_RENDER_SIDE: f32 = 7_000.0;

/// Sent to the parse worker with each document (`crate::parse_worker`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TesseractOcr {
    pdftoppm: PathBuf,
    tesseract: PathBuf,
    /// `vie+eng`: the languages asked for that are installed.
    languages: String,
    dpi: u32,
    timeout: Duration,
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").map(|p| std::env::split_paths(&p).map(|d| d.join(name)).find(|f| f.is_file())).unwrap_or(None)
}

/// Why OCR cannot run on this machine.
#[derive(Debug, thiserror::Error)]
pub enum OcrUnavailable {
    #[error("{program} not found (Debian: {package})")]
    ProgramMissing { program: &'static str, package: &'static str },
    #[error("tesseract --list-langs: {0}")]
    ListingLanguages(#[source] std::io::Error),
    #[error("none of the OCR languages {wanted} is installed (have: {})", installed.join(", "))]
    NoLanguage { wanted: String, installed: Vec<String> },
}

impl TesseractOcr {
    /// The recogniser when both programs are installed, with the wanted
    /// languages (`+`-separated) narrowed to those tesseract has; otherwise
    /// why not.
    pub fn detect(languages: &str, dpi: u32, timeout: Duration) -> Result<Self, OcrUnavailable> {
        let pdftoppm = find_in_path("pdftoppm").ok_or(OcrUnavailable::ProgramMissing { program: "pdftoppm", package: "poppler-utils" })?;
        let tesseract =
            find_in_path("tesseract").ok_or(OcrUnavailable::ProgramMissing { program: "tesseract", package: "tesseract-ocr" })?;
        let listed = Command::new(&tesseract).arg("--list-langs").output().map_err(OcrUnavailable::ListingLanguages)?;
        let installed: Vec<String> = String::from_utf8_lossy(&listed.stdout).lines().skip(1).map(|l| l.trim().to_string()).collect();
        let usable: Vec<&str> = languages.split('+').filter(|l| installed.iter().any(|i| i == l)).collect();
        if usable.is_empty() {
            return Err(OcrUnavailable::NoLanguage { wanted: languages.to_string(), installed });
        }
        Ok(TesseractOcr { pdftoppm, tesseract, languages: usable.join("+"), dpi, timeout })
    }

    pub fn languages(&self) -> &str {
        &self.languages
    }
}

/// Runs a command to completion or kills it at the deadline.
fn run(mut cmd: Command, deadline: Instant, stderr_file: &Path) -> Result<(), OcrError> {
    let program = format!("{:?}", cmd.get_program());
    let stderr = std::fs::File::create(stderr_file)?;
    let ran = |source| OcrError::Run { program: program.clone(), source };
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(stderr).spawn().map_err(ran)?;
    loop {
        match child.try_wait().map_err(ran)? {
            Some(status) if status.success() => return Ok(()),
            Some(status) => {
                let err = std::fs::read_to_string(stderr_file).unwrap_or_default();
                return Err(OcrError::Failed { program, status, stderr: err.trim().chars().take(300).collect() });
            }
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(OcrError::TimedOut { program });
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

impl TesseractOcr {
    /// Runs `work` in a private temporary directory, removed afterwards.
    fn in_temp_dir<T>(work: impl FnOnce(&Path) -> Result<T, OcrError>) -> Result<T, OcrError> {
        let dir = std::env::temp_dir().join(format!("rag-engine-ocr-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).map_err(|source| OcrError::File { what: "temporary directory", source })?;
        let result = work(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        result
    }

    /// tesseract on `dir/<image>`: its words, boxes scaled by `scale`.
    fn read(&self, dir: &Path, image: &str, scale: f32, deadline: Instant) -> Result<OcrPage, OcrError> {
        let mut read = Command::new(&self.tesseract);
        // TSV: every word with its block, paragraph, line and box.
        read.arg(dir.join(image)).arg(dir.join("out")).args(["-l", &self.languages, "tsv"]);
        run(read, deadline, &dir.join("tesseract.err"))?;
        let tsv = std::fs::read_to_string(dir.join("out.tsv")).map_err(|source| OcrError::File { what: "tesseract output", source })?;
        parse_tsv(&tsv, scale)
    }
}

impl PageOcr for TesseractOcr {
    /// The image as the parser decoded it (upright): boxes in its pixels.
    fn recognize_image(&self, image: &GrayImage) -> Result<OcrPage, OcrError> {
        Self::in_temp_dir(|dir| {
            let deadline = Instant::now() + self.timeout;
            std::fs::write(dir.join("page.pgm"), image.to_pgm())?;
            self.read(dir, "page.pgm", 1.0, deadline)
        })
    }

    fn recognize(&self, pdf: &[u8], page_idx: u32, size: Option<&PageSize>) -> Result<OcrPage, OcrError> {
        Self::in_temp_dir(|dir| {
            let deadline = Instant::now() + self.timeout;
            std::fs::write(dir.join("in.pdf"), pdf)?;
            let page = (page_idx + 1).to_string();
            // Points per pixel of the rendering: 72/dpi, unless the page is
            // so large that its long side is scaled to MAX_RENDER_SIDE.
            let dpi = self.dpi as f32;
            let long_side_pt = size.filter(|s| s.unit == "pt").map(|s| s.width.max(s.height));
            let scaled_to = |px: f32| ["-scale-to".to_string(), (px as u32).to_string()];
            let (resolution, scale) = match long_side_pt {
                Some(pt) if pt / 72.0 * dpi <= MAX_RENDER_SIDE => (["-r".to_string(), self.dpi.to_string()], 72.0 / dpi),
                Some(pt) => (scaled_to(MAX_RENDER_SIDE), pt / MAX_RENDER_SIDE),
                // Of unknown size: scaled as an A4 page would be (its long
                // side 11.69 inches), never rendered uncapped. Its boxes are
                // approximate; such a page has no size to draw them on.
                None => (scaled_to((11.69 * dpi).min(MAX_RENDER_SIDE)), 72.0 / dpi),
            };
            let mut render = Command::new(&self.pdftoppm);
            render
                .args(["-f", &page, "-l", &page])
                .args(&resolution)
                .args(["-gray", "-png", "-singlefile"])
                .arg(dir.join("in.pdf"))
                .arg(dir.join("page"));
            run(render, deadline, &dir.join("pdftoppm.err"))?;
            self.read(dir, "page.png", scale, deadline)
        })
    }
}

/// Tesseract's TSV (`level page block par line word left top width height
/// conf text`): the words (level 5) in reading order, boxes scaled from
/// pixels by `scale` (points per pixel at the rendering resolution).
fn parse_tsv(tsv: &str, scale: f32) -> Result<OcrPage, OcrError> {
    let mut words = Vec::new();
    for (n, line) in tsv.lines().enumerate().skip(1) {
        let cols: Vec<&str> = line.splitn(12, '\t').collect();
        if cols.len() < 12 || cols[0] != "5" || cols[11].trim().is_empty() {
            continue;
        }
        let num = |i: usize| {
            cols[i].trim().parse::<f32>().map_err(|_| OcrError::BadNumber {
                format: "tesseract TSV",
                line: n + 1,
                value: cols[i].to_string(),
            })
        };
        let (block, par, line_no) = (num(2)? as u32, num(3)? as u32, num(4)? as u32);
        let (left, top, width, height) = (num(6)?, num(7)?, num(8)?, num(9)?);
        words.push(OcrWord {
            text: cols[11].trim().to_string(),
            // Paragraph and line numbers restart per block.
            paragraph: block * 10_000 + par,
            line: (block * 10_000 + par) * 10_000 + line_no,
            rect: Some(Rect { x0: left * scale, y0: top * scale, x1: (left + width) * scale, y1: (top + height) * scale }),
        });
    }
    Ok(OcrPage { words })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsv_words_keep_paragraphs_lines_and_boxes_in_points() {
        let tsv = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n\
                   1\t1\t0\t0\t0\t0\t0\t0\t2480\t3508\t-1\t\n\
                   5\t1\t1\t1\t1\t1\t150\t150\t300\t60\t95.1\tDoanh\n\
                   5\t1\t1\t1\t1\t2\t480\t150\t120\t60\t94.0\tthu\n\
                   5\t1\t1\t1\t2\t1\t150\t280\t200\t60\t90.0\ttăng\n\
                   5\t1\t2\t1\t1\t1\t150\t540\t200\t60\t91.0\tRevenue\n";
        let page = parse_tsv(tsv, 72.0 / 300.0).unwrap();
        assert_eq!(page.words.len(), 4);
        let block = page.block(0);
        assert_eq!(block.text, "Doanh thu\ntăng\n\nRevenue");
        let r = page.words[0].rect.unwrap();
        assert_eq!((r.x0, r.y0, r.x1), (36.0, 36.0, 108.0));
        assert!((r.y1 - 50.4).abs() < 1e-3);
        let bad = parse_tsv("h\n5\t1\t1\t1\t1\t1\tx\t1\t1\t1\t1\tw\n", 1.0).unwrap_err();
        assert_eq!(bad.to_string(), "tesseract TSV line 2: bad number \"x\"");
    }

    #[test]
    fn a_program_that_fails_or_cannot_start_says_which_and_why() {
        let dir = std::env::temp_dir().join(format!("rag-engine-ocr-test-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut fails = Command::new("sh");
        fails.args(["-c", "echo broken >&2; exit 3"]);
        let err = run(fails, deadline, &dir.join("sh.err")).unwrap_err();
        assert_eq!(err.to_string(), "\"sh\" failed (exit status: 3): broken");
        let err = run(Command::new("/nonexistent/pdftoppm"), deadline, &dir.join("x.err")).unwrap_err();
        assert!(err.to_string().starts_with("\"/nonexistent/pdftoppm\": No such file"), "{err}");
        let mut sleeps = Command::new("sleep");
        sleeps.arg("5");
        let err = run(sleeps, Instant::now(), &dir.join("sleep.err")).unwrap_err();
        assert_eq!(err.to_string(), "\"sleep\" timed out");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
