//! OCR of PDF pages without a text layer: poppler's `pdftoppm` renders the
//! page, `tesseract` reads it (Debian: poppler-utils, tesseract-ocr,
//! tesseract-ocr-vie, tesseract-ocr-eng). Both run as child processes with
//! a deadline, in a private temporary directory removed afterwards.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rag_docparse::PageOcr;

#[derive(Debug, Clone)]
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

impl TesseractOcr {
    /// The recogniser when both programs are installed, with the wanted
    /// languages (`+`-separated) narrowed to those tesseract has; otherwise
    /// why not.
    pub fn detect(languages: &str, dpi: u32, timeout: Duration) -> Result<Self, String> {
        let pdftoppm = find_in_path("pdftoppm").ok_or("pdftoppm not found (Debian: poppler-utils)")?;
        let tesseract = find_in_path("tesseract").ok_or("tesseract not found (Debian: tesseract-ocr)")?;
        let listed = Command::new(&tesseract).arg("--list-langs").output().map_err(|e| format!("tesseract --list-langs: {e}"))?;
        let installed: Vec<String> = String::from_utf8_lossy(&listed.stdout).lines().skip(1).map(|l| l.trim().to_string()).collect();
        let usable: Vec<&str> = languages.split('+').filter(|l| installed.iter().any(|i| i == l)).collect();
        if usable.is_empty() {
            return Err(format!("none of the OCR languages {languages} is installed (have: {})", installed.join(", ")));
        }
        Ok(TesseractOcr { pdftoppm, tesseract, languages: usable.join("+"), dpi, timeout })
    }

    pub fn languages(&self) -> &str {
        &self.languages
    }
}

/// Runs a command to completion or kills it at the deadline.
fn run(mut cmd: Command, deadline: Instant, stderr_file: &Path) -> Result<(), String> {
    let what = format!("{:?}", cmd.get_program());
    let stderr = std::fs::File::create(stderr_file).map_err(|e| e.to_string())?;
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(stderr).spawn().map_err(|e| format!("{what}: {e}"))?;
    loop {
        match child.try_wait().map_err(|e| format!("{what}: {e}"))? {
            Some(status) if status.success() => return Ok(()),
            Some(status) => {
                let err = std::fs::read_to_string(stderr_file).unwrap_or_default();
                return Err(format!("{what} failed ({status}): {}", err.trim().chars().take(300).collect::<String>()));
            }
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{what} timed out"));
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

impl PageOcr for TesseractOcr {
    fn recognize(&self, pdf: &[u8], page_idx: u32) -> Result<String, String> {
        let dir = std::env::temp_dir().join(format!("rag-engine-ocr-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("temporary directory: {e}"))?;
        let result = (|| {
            let deadline = Instant::now() + self.timeout;
            std::fs::write(dir.join("in.pdf"), pdf).map_err(|e| e.to_string())?;
            let page = (page_idx + 1).to_string();
            let mut render = Command::new(&self.pdftoppm);
            render
                .args(["-f", &page, "-l", &page, "-r", &self.dpi.to_string(), "-gray", "-png", "-singlefile"])
                .arg(dir.join("in.pdf"))
                .arg(dir.join("page"));
            run(render, deadline, &dir.join("pdftoppm.err"))?;
            let mut read = Command::new(&self.tesseract);
            read.arg(dir.join("page.png")).arg(dir.join("out")).args(["-l", &self.languages]);
            run(read, deadline, &dir.join("tesseract.err"))?;
            std::fs::read_to_string(dir.join("out.txt")).map_err(|e| format!("tesseract output: {e}"))
        })();
        let _ = std::fs::remove_dir_all(&dir);
        result
    }
}
