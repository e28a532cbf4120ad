//! What a soak does and when: the schedule scaled to the run's length, the
//! questions, the files uploaded (every format the generators of the tests
//! write, hostile ones among them) and what the hostile ones must end as.

use serde_json::json;
use std::time::Duration;

use super::super::corpus::{self, Expect};

/// The hostile inputs, spreadsheets and slide decks of the integration
/// tests, generated small (the files `rag-engine`'s tests include by path).
#[path = "../../../../docparse/src/tests/hostile_inputs.rs"]
mod hostile_inputs;
#[path = "../../../../docparse/src/tests/sheet_inputs.rs"]
mod sheet_inputs;
#[path = "../../../../docparse/src/tests/slide_inputs.rs"]
mod slide_inputs;

/// The steady load and the fault schedule, scaled to the run's length.
pub(super) struct Schedule {
    pub(super) length: Duration,
    pub(super) sample_every: Duration,
    pub(super) upload_every: Duration,
    /// Uploaded documents kept; past it the oldest is deleted.
    pub(super) live_uploads: usize,
    /// Every how many uploads a hostile one comes.
    pub(super) hostile_every: usize,
    pub(super) question_every: Duration,
    pub(super) chat_every: Duration,
    pub(super) mcp_every: Duration,
    pub(super) key_every: Duration,
    pub(super) folder_every: Duration,
    pub(super) strike_every: Duration,
    /// The broker, Postgres and the object store restarted in turn.
    pub(super) restart_every: Duration,
    /// When the re-chunking replay starts, as a share of the run.
    pub(super) replay_at: f64,
}

impl Schedule {
    pub(super) fn of(minutes: u64) -> Schedule {
        let length = Duration::from_secs(minutes.max(1) * 60);
        Schedule {
            length,
            sample_every: if minutes >= 30 { Duration::from_secs(60) } else { Duration::from_secs(15) },
            // Every 10 s, at random moments (`Arrivals`). Uploading every 5
            // s (the fourth hour) loaded the pipeline and left the answer
            // doors' median at 1.5 s from the start instead of 1.0 s.
            upload_every: Duration::from_secs(10),
            // A short run deletes and meets every hostile file too. An hour
            // keeps 20: deletions begin in its fourth minute, so its first
            // ten minutes hold some 40 of them to set the deletions' p99
            // against (at 40 kept they began at minute 7: 16 requests, and
            // one slow request was the p99).
            live_uploads: if minutes >= 30 { 20 } else { 12 },
            hostile_every: if minutes >= 30 { 25 } else { 7 },
            // An hour asks often enough for a p99 to be more than the
            // slowest request: in ten minutes some 400 page questions (a
            // third first questions read whole, a third follow-ups, a sixth
            // hanging up, a sixth read slowly), 600 chat completions and 400
            // MCP calls (half of each streamed or `ask`): away from the
            // faults a stretch keeps some 200 requests a chat door, 130 MCP
            // `ask`s and 45 to 90 a page door (at 35 to 50 a door, the
            // second hour's, one slow request was a stretch's p99). The
            // requests come at random moments around these means
            // (`Arrivals`), not in step with the strikes.
            question_every: if minutes >= 30 { Duration::from_millis(1500) } else { Duration::from_secs(6) },
            chat_every: if minutes >= 30 { Duration::from_secs(1) } else { Duration::from_secs(10) },
            mcp_every: if minutes >= 30 { Duration::from_millis(1500) } else { Duration::from_secs(5) },
            key_every: if minutes >= 30 { Duration::from_secs(300) } else { Duration::from_secs(90) },
            folder_every: Duration::from_secs(30),
            strike_every: Duration::from_secs(30),
            // An hour: every 10 minutes from minute 5; a short run: each
            // service once (five minutes: at 50, 150 and 250 s).
            restart_every: if minutes >= 30 { Duration::from_secs(600) } else { length / 3 },
            replay_at: 0.4,
        }
    }

    /// Questions a minute the load asks (page, chat completions, MCP
    /// `ask`): the run's rate limit is set well above it, as a 429 fails
    /// the run.
    pub(super) fn questions_per_minute(&self) -> f64 {
        let per_minute = |every: Duration| 60.0 / every.as_secs_f64().max(0.001);
        per_minute(self.question_every) + per_minute(self.chat_every) + per_minute(self.mcp_every) / 2.0
    }
}

/// When one door's next request is due: gaps drawn uniformly between half
/// and one and a half times the mean, so that over a stretch the requests
/// meet every moment of the fixed fault rotation (in step with it, a door
/// asking every 12 s met a strike every 30 s at the same five moments in
/// every stretch, and the same few requests set its p99). Requests missed
/// while the loop waited (a sample during a restart) are skipped, not fired
/// in a burst.
pub(super) struct Arrivals {
    every: f64,
    next: f64,
    rng: fastrand::Rng,
}

impl Arrivals {
    pub(super) fn new(every: Duration, seed: u64) -> Arrivals {
        let mut rng = fastrand::Rng::with_seed(seed);
        let every = every.as_secs_f64();
        // The first request at a random moment of the first gap.
        Arrivals { every, next: every * rng.f64(), rng }
    }

    /// Whether a request is due at `now` (seconds since the load began);
    /// when it is, the next one is drawn.
    pub(super) fn due(&mut self, now: f64) -> bool {
        if now < self.next {
            return false;
        }
        let from = if now - self.next > self.every { now } else { self.next };
        self.next = from + self.every * (0.5 + self.rng.f64());
        true
    }
}

pub(super) const QUESTIONS: [&str; 6] = [
    "Doanh thu thay đổi bao nhiêu?",
    "Chi phí vận chuyển thay đổi thế nào?",
    "Cổ tức quý 2 ra sao?",
    "Badge office thay đổi bao nhiêu phần trăm?",
    "Parking level thay đổi trong quý nào?",
    "Expense reports thay đổi bao nhiêu?",
];
pub(super) const FOLLOW_UPS: [&str; 3] = ["Còn quý 3 thì sao?", "Còn chi phí vận chuyển thì sao?", "Còn cổ tức thì sao?"];

/// Among the uploads, now and then one of these: a deflate bomb in a PDF, a
/// DOCX whose entry lies about its size (both fail with their reason), a
/// deeply nested HTML page (read), an empty file (refused at the door).
pub(super) fn hostile_files() -> Vec<(corpus::CorpusFile, Option<&'static str>)> {
    let file = |name: &str, bytes: Vec<u8>, expect| corpus::CorpusFile { name: name.to_string(), bytes, expect };
    vec![
        (file("bomb.pdf", hostile_inputs::flate_bomb_pdf(300 << 20), Expect::Failed), Some("decompression_bomb")),
        (file("lie.docx", hostile_inputs::lying_docx(64 << 20), Expect::Failed), Some("decompression_bomb")),
        (file("nested.html", hostile_inputs::nested_html(200_000), Expect::Ingested), None),
        (file("empty.txt", Vec::new(), Expect::Failed), None),
    ]
}

/// The chaos corpus (text, Markdown, HTML, DOCX, Document AI JSON, PDF) with
/// one file in four replaced by a spreadsheet or a slide deck in turn (the
/// second of each four: the corrupt PDFs, every twentieth, stay):
/// XLSX, ODS, XLS, CSV, PPTX, ODP.
pub(super) fn more_formats(mut files: Vec<corpus::CorpusFile>) -> Vec<corpus::CorpusFile> {
    use sheet_inputs::Value as Cell;
    let rows = |i: usize| {
        let mut rows = sheet_inputs::finance_rows();
        rows.push(vec![Cell::Text("Kỳ"), Cell::Number(i as f64), Cell::Empty, Cell::Empty, Cell::Empty]);
        rows
    };
    for (k, f) in files.iter_mut().enumerate().filter(|(k, _)| k % 4 == 1) {
        let i = k / 4;
        let title = format!("Báo cáo số {i}");
        let deck = || {
            vec![slide_inputs::Slide {
                shapes: vec![
                    slide_inputs::Shape::Title(&title),
                    slide_inputs::Shape::Body(vec!["Doanh thu tăng 12,6% so với năm trước.", "Chi phí vận chuyển giảm."]),
                ],
                notes: vec!["Số liệu đã kiểm toán."],
            }]
        };
        let (ext, bytes) = match i % 6 {
            0 => ("xlsx", sheet_inputs::xlsx(&[("Tài chính", rows(i))])),
            1 => ("ods", sheet_inputs::ods(&[("Tài chính", rows(i))])),
            2 => ("xls", sheet_inputs::xls(&[("Tài chính", rows(i))])),
            3 => ("csv", sheet_inputs::long_csv(20 + i % 30)),
            4 => ("pptx", slide_inputs::pptx(&deck())),
            _ => ("odp", slide_inputs::odp(&deck())),
        };
        *f = corpus::CorpusFile { name: format!("bang-{k:05}.{ext}"), bytes, expect: Expect::Ingested };
    }
    files
}

/// A hostile upload the API accepted: its document, its file name, and the
/// failure code it must end with (None: it must be read).
pub(super) type HostileUpload = (String, String, Option<&'static str>);

/// The hostile uploads the API accepted: each failed with its reason (the
/// nested HTML page read).
pub(super) async fn hostile_check(
    pool: &rag_store::sqlx::PgPool,
    workspace: &str,
    accepted: &[HostileUpload],
) -> anyhow::Result<serde_json::Value> {
    let docs = rag_store::documents::list(pool, workspace).await?;
    let mut wrong = Vec::new();
    for (id, name, code) in accepted {
        let Some(d) = docs.iter().find(|d| d.id.to_string() == *id) else {
            wrong.push(format!("{name} ({id}): not listed"));
            continue;
        };
        let ok = match code {
            Some(code) => d.status == rag_store::documents::DocumentStatus::Failed && d.failure_code.as_deref() == Some(*code),
            None => d.status == rag_store::documents::DocumentStatus::Ingested,
        };
        if !ok {
            wrong.push(format!("{name} ({id}): {} {:?}, expected {}", d.status, d.failure_code, code.unwrap_or("ingested")));
        }
    }
    Ok(json!({"ok": wrong.is_empty(), "accepted": accepted.len(), "wrong": wrong}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_keep_their_mean_rate_at_random_moments_and_skip_a_stall() {
        let mut a = Arrivals::new(Duration::from_secs(2), 7);
        let (mut fired, mut moments) = (Vec::new(), std::collections::BTreeSet::new());
        let mut now = 0.0;
        while now < 3000.0 {
            if a.due(now) {
                fired.push(now);
                // Where in a 30 s strike rotation the request lands.
                moments.insert((now % 30.0) as u32);
            }
            now += 0.2;
        }
        let rate = fired.len() as f64 / 3000.0;
        assert!((rate - 0.5).abs() < 0.03, "{rate} requests a second, 0.5 expected");
        assert_eq!(moments.len(), 30, "every second of the rotation is met: {moments:?}");
        // A stall of a minute: one request when the loop comes back, not 30.
        let mut b = Arrivals::new(Duration::from_secs(2), 7);
        let after_stall = (0..5).filter(|k| b.due(60.0 + f64::from(*k) * 0.2)).count();
        assert_eq!(after_stall, 1);
    }

    #[test]
    fn the_hour_asks_within_its_rate_limit_and_a_short_run_as_before() {
        let hour = Schedule::of(60);
        assert!((hour.questions_per_minute() - 120.0).abs() < 1e-9);
        assert!((Schedule::of(5).questions_per_minute() - 22.0).abs() < 1e-9);
    }

    /// Uploads come at random moments too (seed 4, as the run draws them):
    /// the short run still meets each of the four hostile files, and an
    /// hour uploads (and deletes) some 60 documents a stretch.
    #[test]
    fn uploads_arrive_often_enough_to_meet_every_hostile_file() {
        let uploads = |plan: &Schedule| {
            let mut a = Arrivals::new(plan.upload_every, 4);
            (0..plan.length.as_millis() / 200).filter(|k| a.due(*k as f64 * 0.2)).count()
        };
        let short = Schedule::of(5);
        // The four of `hostile_files` (not built here: a bomb is 300 MB inflated).
        assert!(uploads(&short) >= short.hostile_every * 4, "{} uploads", uploads(&short));
        let hour = Schedule::of(60);
        let per_stretch = uploads(&hour) / 6;
        assert!((55..=65).contains(&per_stretch), "{per_stretch} uploads (and deletions) a stretch");
    }
}
