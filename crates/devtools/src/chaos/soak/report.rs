// Kept whole at ~540 lines of code: the figures, the verdicts drawn from them and the page that draws them are read together when a gate changes; every part is pure and tested below.
//! What a soak run recorded, and what it concludes: pure, so that the
//! verdicts and the charts are tested without a stack.
//!
//! Times are seconds since the run started. A request's `status` is its
//! HTTP status, 0 when no status came (connection refused, timed out).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One request through a door, as the client saw it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RequestRecord {
    pub door: String,
    /// When it started.
    pub at: f64,
    /// Until its answer was complete (a stream: until its last event).
    pub secs: f64,
    pub status: u16,
}

/// A fault the run injected.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Fault {
    pub at: f64,
    /// `sigkill`, `sigterm` (a stage process), `restart` (a service).
    pub kind: String,
    pub target: String,
}

/// The figures sampled at one moment.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Sample {
    pub at: f64,
    /// Resident memory (KiB) per process (`run-all`, the struck stage
    /// processes, `broker`, `postgres` with its backends, `objectstore`).
    pub rss_kib: BTreeMap<String, u64>,
    /// Open file descriptors per process (Postgres: the postmaster's).
    pub fds: BTreeMap<String, u64>,
    /// Connections to the run's database: all of them, and `run all`'s.
    /// A figure that could not be read (a restart under way) is None.
    pub pg_connections: Option<i64>,
    #[serde(default)]
    pub run_all_connections: Option<i64>,
    /// Bytes on disk: `broker` (its data directory), `postgres` (the run's
    /// database), `objectstore` (the bucket's directory).
    pub disk_bytes: BTreeMap<String, u64>,
    /// Records not yet processed, per stage (summed over its topics).
    pub lag: BTreeMap<String, i64>,
    /// Event streams the API holds open (`rag_http_in_flight{kind="stream"}`).
    pub open_streams: Option<f64>,
    /// Documents ever accepted, and those not deleted.
    pub documents: Option<i64>,
    pub documents_live: Option<i64>,
    /// Answers produced so far (assistant messages done or failed).
    pub answers: Option<i64>,
}

/// Latency and refusals of one door in one window.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DoorWindow {
    pub requests: usize,
    pub p50: f64,
    pub p99: f64,
    pub refused_429: usize,
    pub failed_5xx: usize,
    /// No status at all (refused connection, timeout).
    pub no_answer: usize,
}

/// The value at quantile `q` (0..=1) of `values` (nearest rank); 0 when empty.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

fn median(values: &[f64]) -> f64 {
    quantile(values, 0.5)
}

/// The requests of each door that started in `[from, to)`. Latency counts
/// answered requests only (2xx); the others are counted by kind.
pub fn door_windows(records: &[RequestRecord], from: f64, to: f64) -> BTreeMap<String, DoorWindow> {
    let mut by_door: BTreeMap<String, (Vec<f64>, DoorWindow)> = BTreeMap::new();
    for r in records.iter().filter(|r| r.at >= from && r.at < to) {
        let (lat, w) = by_door.entry(r.door.clone()).or_default();
        w.requests += 1;
        match r.status {
            0 => w.no_answer += 1,
            429 => w.refused_429 += 1,
            s if s >= 500 => w.failed_5xx += 1,
            s if (200..300).contains(&s) => lat.push(r.secs),
            _ => {}
        }
    }
    by_door
        .into_iter()
        .map(|(door, (lat, mut w))| {
            w.p50 = quantile(&lat, 0.5);
            w.p99 = quantile(&lat, 0.99);
            (door, w)
        })
        .collect()
}

/// Whether a request overlapped a service restart or the `grace` seconds
/// after it began (clients reconnect, groups rebalance): a broker or
/// database away is a fault the run injects, not a drift of the service.
pub fn near_restart(r: &RequestRecord, faults: &[Fault], grace: f64) -> bool {
    faults.iter().filter(|f| f.kind == "restart").any(|f| r.at <= f.at + grace && r.at + r.secs >= f.at)
}

/// Whether a request is left out of the latency drift: it *began* in a
/// fault's window. By its start, not by overlap: a request slow for reasons
/// of its own overlaps more faults, and leaving out by overlap would leave
/// out most surely the slow requests the drift is there to see.
/// - a service restart: from `LEAD` seconds before it to `RESTART_GRACE`
///   after (clients reconnect, groups rebalance);
/// - for the doors that wait for an answer, a strike of a stage on the
///   answers' path (the answerer, the projector): from `LEAD` before to
///   `STRIKE_GRACE` after (the group's session timeout, the rebalance and
///   the question answered again).
///
/// Both are latencies the schedule injects, the same in every stretch; the
/// judged figure is the service's own latency away from them, and the
/// verdict gives the raw p99 of all requests beside.
pub fn near_fault(r: &RequestRecord, faults: &[Fault]) -> bool {
    let began_in = |f: &Fault, grace: f64| r.at >= f.at - LEAD && r.at <= f.at + grace;
    let answer_door = ANSWER_DOORS.contains(&r.door.as_str());
    faults.iter().any(|f| match f.kind.as_str() {
        "restart" => began_in(f, RESTART_GRACE),
        "sigkill" | "sigterm" => answer_door && ANSWER_PATH.contains(&f.target.as_str()) && began_in(f, STRIKE_GRACE),
        _ => false,
    })
}

/// Fewer requests than this in a stretch, away from the faults, and a
/// door's p99 drift is not judged (reported as such).
pub const MIN_REQUESTS: usize = 10;

/// The struck stages an answer waits for.
const ANSWER_PATH: [&str; 2] = ["answerer", "projector"];

/// The doors whose requests wait for an answer.
const ANSWER_DOORS: [&str; 7] = ["page", "page_followup", "page_hangs_up", "page_slow_reader", "chat", "chat_stream", "mcp_ask"];

/// Seconds before a fault in which a request that began is left out of the
/// drift: an answer takes one or two seconds away from faults, so one begun
/// this shortly before is still waiting when the fault comes.
pub const LEAD: f64 = 5.0;

/// Seconds after a strike on the answers' path in which a request that
/// began is left out of the drift: the soak's session timeout (6 s), the
/// rebalance and the answer asked again.
pub const STRIKE_GRACE: f64 = 15.0;

/// A request that failed: no answer, a 5xx, refused for its credentials or
/// its rate (the load stays within the limits; a 400 for the empty upload
/// is its right answer).
pub fn failed(r: &RequestRecord) -> bool {
    matches!(r.status, 0 | 401 | 403 | 429) || r.status >= 500
}

/// Seconds after a service restart began during which requests are left
/// out of the latency drift.
pub const RESTART_GRACE: f64 = 60.0;

/// One judged figure: what was measured against what it must hold.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Verdict {
    pub figure: String,
    pub measured: String,
    pub limit: String,
    pub ok: bool,
}

/// The windows a run is judged on: the warm-up (excluded from growth), and
/// the first and last stretch whose latencies are compared. For an hour:
/// 10 minutes each.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Windows {
    pub warmup: f64,
    pub stretch: f64,
    pub end: f64,
}

impl Windows {
    pub fn of(seconds: f64) -> Windows {
        let stretch = (seconds / 6.0).max(1.0);
        Windows { warmup: stretch, stretch, end: seconds }
    }
}

/// Growth, flatness and drift, as the soak's acceptance states them:
/// resident memory of `run-all` growing by at most 5% after the warm-up
/// (median of the first stretch after it against the median of the last),
/// its file descriptors and the database connections flat (the last
/// stretch's highest at most 2 above the first's, which absorbs a
/// connection opened for a sync or a refresh at the moment of sampling),
/// and each door's p99 in the last stretch within 1.25x of the first, on
/// the requests away from the faults ([`near_fault`]; the raw figures are
/// in the verdict and the report beside).
pub fn judge(samples: &[Sample], records: &[RequestRecord], faults: &[Fault], w: Windows) -> Vec<Verdict> {
    let mut out = Vec::new();
    let after = |from: f64, to: f64| samples.iter().filter(move |s| s.at >= from && s.at < to);
    let first = (w.warmup, w.warmup + w.stretch);
    let last = (w.end - w.stretch, w.end + 1.0);
    let rss = |from, to| after(from, to).filter_map(|s| s.rss_kib.get("run-all").map(|v| *v as f64)).collect::<Vec<_>>();
    let (a, b) = (rss(first.0, first.1), rss(last.0, last.1));
    if !a.is_empty() && !b.is_empty() {
        let growth = median(&b) / median(&a).max(1.0) - 1.0;
        out.push(Verdict {
            figure: "run-all resident memory growth after warm-up".into(),
            measured: format!("{:+.1}% ({:.0} -> {:.0} MiB)", growth * 100.0, median(&a) / 1024.0, median(&b) / 1024.0),
            limit: "<= +5%".into(),
            ok: growth <= 0.05,
        });
    }
    let flat = |name: &str, get: &dyn Fn(&Sample) -> Option<f64>| -> Option<Verdict> {
        let a: Vec<f64> = after(first.0, first.1).filter_map(get).collect();
        let b: Vec<f64> = after(last.0, last.1).filter_map(get).collect();
        if a.is_empty() || b.is_empty() {
            return None;
        }
        let (ma, mb) = (a.iter().copied().fold(f64::MIN, f64::max), b.iter().copied().fold(f64::MIN, f64::max));
        Some(Verdict { figure: name.into(), measured: format!("{ma:.0} -> {mb:.0}"), limit: "at most 2 more".into(), ok: mb <= ma + 2.0 })
    };
    out.extend(flat("run-all open file descriptors (highest)", &|s| s.fds.get("run-all").map(|v| *v as f64)));
    out.extend(flat("run-all database connections (highest)", &|s| s.run_all_connections.map(|v| v as f64)));
    let calm: Vec<RequestRecord> = records.iter().filter(|r| !near_fault(r, faults)).cloned().collect();
    let (a, b) = (door_windows(&calm, 0.0, w.stretch), door_windows(&calm, last.0, last.1));
    let (raw_a, raw_b) = (door_windows(records, 0.0, w.stretch), door_windows(records, last.0, last.1));
    for (door, first) in &a {
        // Nothing answered to compare with (the revoked key's door is
        // answered 401 by design).
        if first.p99 <= 0.0 {
            continue;
        }
        let end = match b.get(door) {
            // A p99 of a handful is not one (the key rotation: two a stretch).
            Some(end) if end.p99 > 0.0 && first.requests.min(end.requests) < MIN_REQUESTS => {
                out.push(Verdict {
                    figure: format!("{door} p99 away from faults, last stretch against first"),
                    measured: format!("not judged: {} / {} requests", first.requests, end.requests),
                    limit: format!("at least {MIN_REQUESTS} requests a stretch"),
                    ok: true,
                });
                continue;
            }
            Some(end) if end.p99 > 0.0 => end,
            // A door answered in the first stretch and not in the last,
            // away from the faults, is not a pass.
            _ => {
                out.push(Verdict {
                    figure: format!("{door} p99 away from faults, last stretch against first"),
                    measured: format!("{} / {} requests answered away from faults", first.requests, b.get(door).map_or(0, |e| e.requests)),
                    limit: "requests in both stretches".into(),
                    ok: false,
                });
                continue;
            }
        };
        let ratio = end.p99 / first.p99;
        let raw = match (raw_a.get(door), raw_b.get(door)) {
            (Some(x), Some(y)) => format!("; all {} / {} requests: {:.2} s -> {:.2} s", x.requests, y.requests, x.p99, y.p99),
            _ => String::new(),
        };
        out.push(Verdict {
            figure: format!("{door} p99 away from faults, last stretch against first"),
            measured: format!("{} / {} requests: {:.2} s -> {:.2} s ({ratio:.2}x){raw}", first.requests, end.requests, first.p99, end.p99),
            limit: "<= 1.25x".into(),
            ok: ratio <= 1.25,
        });
    }
    out
}

/// Disk growth per 1,000 documents accepted, per store, between the first
/// and the last sample (None when no document came in between).
pub fn disk_per_thousand(samples: &[Sample]) -> BTreeMap<String, f64> {
    let (Some(a), Some(b)) = (samples.first(), samples.last()) else { return BTreeMap::new() };
    let docs = (b.documents.unwrap_or(0) - a.documents.unwrap_or(0)) as f64;
    if docs <= 0.0 {
        return BTreeMap::new();
    }
    b.disk_bytes
        .iter()
        .map(|(k, end)| {
            let start = a.disk_bytes.get(k).copied().unwrap_or(0) as f64;
            (k.clone(), (*end as f64 - start) / docs * 1000.0)
        })
        .collect()
}

// ---- the page: one SVG chart per figure, faults on the time axis ----

const W: f64 = 720.0;
const H: f64 = 200.0;
const PAD_L: f64 = 64.0;
const PAD_B: f64 = 24.0;
const COLOURS: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Named series of (seconds, value) points, one line each in a chart.
pub type Series = Vec<(String, Vec<(f64, f64)>)>;

/// A line chart of named series over `[0, end]` seconds; service restarts
/// are red dashed lines, stage kills grey ticks along the bottom.
pub fn chart(title: &str, unit: &str, series: &[(String, Vec<(f64, f64)>)], faults: &[Fault], end: f64) -> String {
    let values = || series.iter().flat_map(|(_, p)| p.iter().map(|(_, y)| *y));
    // From 0, or below it for a figure that shrank (a disk's growth).
    let ymin = values().fold(0.0f64, f64::min) * 1.1;
    let ymax = values().fold(0.0f64, f64::max).max(ymin + 1e-9) * 1.1;
    let x = |t: f64| PAD_L + (t / end.max(1.0)) * (W - PAD_L - 8.0);
    let y = |v: f64| (H - PAD_B) - ((v - ymin) / (ymax - ymin)) * (H - PAD_B - 8.0);
    let mut svg = format!(
        r#"<figure><figcaption>{}</figcaption><svg viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" aria-label="{}">"#,
        escape(title),
        escape(title)
    );
    svg.push_str(&format!(
        r##"<line x1="{PAD_L}" y1="{}" x2="{}" y2="{}" stroke="#999"/><line x1="{PAD_L}" y1="8" x2="{PAD_L}" y2="{}" stroke="#999"/>"##,
        H - PAD_B,
        W - 8.0,
        H - PAD_B,
        H - PAD_B
    ));
    for k in 0..=4 {
        let v = ymin + (ymax - ymin) / 1.1 * f64::from(k) / 4.0;
        svg.push_str(&format!(
            r##"<text x="{}" y="{:.1}" font-size="10" text-anchor="end" fill="#555">{} {}</text>"##,
            PAD_L - 4.0,
            y(v) + 3.0,
            short(v),
            escape(unit)
        ));
    }
    let minutes = (end / 60.0).ceil() as u64;
    let step = (minutes / 12).max(1);
    for m in (0..=minutes).step_by(step as usize) {
        svg.push_str(&format!(
            r##"<text x="{:.1}" y="{}" font-size="10" text-anchor="middle" fill="#555">{m} min</text>"##,
            x(m as f64 * 60.0),
            H - 8.0
        ));
    }
    for f in faults {
        let fx = x(f.at);
        if f.kind == "restart" {
            svg.push_str(&format!(
                r##"<line x1="{fx:.1}" y1="8" x2="{fx:.1}" y2="{}" stroke="#d62728" stroke-dasharray="4 3"><title>{} restarted at {:.0} s</title></line>"##,
                H - PAD_B,
                escape(&f.target),
                f.at
            ));
        } else if f.kind == "replay" {
            svg.push_str(&format!(
                r##"<line x1="{fx:.1}" y1="8" x2="{fx:.1}" y2="{}" stroke="#1f77b4" stroke-dasharray="1 3"><title>{} replay at {:.0} s</title></line>"##,
                H - PAD_B,
                escape(&f.target),
                f.at
            ));
        } else {
            svg.push_str(&format!(
                r##"<line x1="{fx:.1}" y1="{}" x2="{fx:.1}" y2="{}" stroke="#aaa"><title>{} {} at {:.0} s</title></line>"##,
                H - PAD_B - 6.0,
                H - PAD_B,
                escape(&f.kind),
                escape(&f.target),
                f.at
            ));
        }
    }
    // The legend goes under the chart, so that it never hides a line.
    let mut legend = String::from(r#"<div class="legend">"#);
    for (i, (name, points)) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let path: Vec<String> = points.iter().map(|(t, v)| format!("{:.1},{:.1}", x(*t), y(*v))).collect();
        if !path.is_empty() {
            svg.push_str(&format!(r#"<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{}"/>"#, path.join(" ")));
        }
        legend.push_str(&format!(r#"<span style="color:{colour}">&#9644; {}</span> "#, escape(name)));
    }
    svg.push_str("</svg>");
    svg.push_str(&legend);
    svg.push_str("</div></figure>\n");
    svg
}

fn short(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A series per key of a map-valued figure.
fn series_of(samples: &[Sample], get: impl Fn(&Sample) -> &BTreeMap<String, u64>, scale: f64) -> Series {
    let mut out: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for s in samples {
        for (k, v) in get(s) {
            out.entry(k.clone()).or_default().push((s.at, *v as f64 / scale));
        }
    }
    out.into_iter().collect()
}

/// A series per key of a map-valued figure, as growth since its first sample.
fn growth_of(samples: &[Sample], get: impl Fn(&Sample) -> &BTreeMap<String, u64>, scale: f64) -> Series {
    series_of(samples, get, scale)
        .into_iter()
        .map(|(k, points)| {
            let first = points.first().map(|p| p.1).unwrap_or(0.0);
            (k, points.into_iter().map(|(t, v)| (t, v - first)).collect())
        })
        .collect()
}

/// Per-minute figures of the requests: p50 and p99 per door, and the
/// refused and failed per minute.
fn per_minute(records: &[RequestRecord], end: f64) -> (Series, Series, Series) {
    let mut median: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut latency: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut bad: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut t = 0.0;
    while t < end {
        let mid = t + 30.0;
        let mut refused = 0;
        let mut failed = 0;
        for (door, w) in door_windows(records, t, t + 60.0) {
            if w.p99 > 0.0 {
                latency.entry(door.clone()).or_default().push((mid, w.p99));
                median.entry(door.clone()).or_default().push((mid, w.p50));
            }
            refused += w.refused_429;
            failed += w.failed_5xx + w.no_answer;
        }
        bad.entry("429 refused".into()).or_default().push((mid, refused as f64));
        bad.entry("5xx or no answer".into()).or_default().push((mid, failed as f64));
        t += 60.0;
    }
    (median.into_iter().collect(), latency.into_iter().collect(), bad.into_iter().collect())
}

/// What `soak.json` holds: the summary and everything sampled.
#[derive(Debug, Serialize, Deserialize)]
pub struct RunData {
    pub summary: serde_json::Value,
    pub samples: Vec<Sample>,
    pub requests: Vec<RequestRecord>,
    pub faults: Vec<Fault>,
}

impl RunData {
    /// The page of this run.
    pub fn html(&self) -> String {
        let title = format!("rag-engine soak, {} minutes", self.summary["minutes"]);
        let end = self.summary["seconds"]["load"].as_f64().unwrap_or(0.0);
        html(&title, &self.summary, &self.samples, &self.requests, &self.faults, end)
    }
}

/// The run's page: verdicts, invariants, and every figure over time.
pub fn html(title: &str, summary: &serde_json::Value, samples: &[Sample], records: &[RequestRecord], faults: &[Fault], end: f64) -> String {
    let mut page = format!(
        "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>{t}</title>\
         <style>body{{font:14px system-ui,sans-serif;max-width:760px;margin:2em auto;color:#222}}\
         figure{{margin:1.5em 0}}figcaption{{font-weight:600;margin-bottom:.3em}}td,th{{padding:2px 8px;text-align:left}}\
         .bad{{color:#b00;font-weight:600}}.legend span{{margin-right:1em;white-space:nowrap;font-size:12px}}</style><h1>{t}</h1>",
        t = escape(title)
    );
    page.push_str(&format!(
        "<p>Red dashed lines: a service restarted (broker, Postgres, object store); grey ticks: a stage process killed; \
         blue dotted: the re-chunking replay began. {} faults in all.</p>",
        faults.len()
    ));
    page.push_str("<table><tr><th>figure</th><th>measured</th><th>limit</th><th></th></tr>");
    for v in summary["verdicts"].as_array().into_iter().flatten() {
        let ok = v["ok"] == true;
        page.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td></tr>",
            escape(v["figure"].as_str().unwrap_or_default()),
            escape(v["measured"].as_str().unwrap_or_default()),
            escape(v["limit"].as_str().unwrap_or_default()),
            if ok { "" } else { "bad" },
            if ok { "ok" } else { "NOT MET" }
        ));
    }
    page.push_str("</table>");
    page.push_str(&format!("<pre>{}</pre>", escape(&serde_json::to_string_pretty(&summary["invariants"]).unwrap_or_default())));
    page.push_str(&chart("Resident memory", "MiB", &series_of(samples, |s| &s.rss_kib, 1024.0), faults, end));
    page.push_str(&chart("Open file descriptors", "", &series_of(samples, |s| &s.fds, 1.0), faults, end));
    let points = |get: &dyn Fn(&Sample) -> Option<f64>| samples.iter().filter_map(|s| get(s).map(|v| (s.at, v))).collect::<Vec<_>>();
    page.push_str(&chart(
        "Database connections and open event streams",
        "",
        &[
            ("connections to the run's database".into(), points(&|s| s.pg_connections.map(|v| v as f64))),
            ("run-all's connections".into(), points(&|s| s.run_all_connections.map(|v| v as f64))),
            ("open event streams".into(), points(&|s| s.open_streams)),
        ],
        faults,
        end,
    ));
    page.push_str(&chart("Disk use, growth since the start", "MiB", &growth_of(samples, |s| &s.disk_bytes, 1024.0 * 1024.0), faults, end));
    let lag: Series = {
        let mut m: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for s in samples {
            for (k, v) in &s.lag {
                m.entry(k.clone()).or_default().push((s.at, *v as f64));
            }
        }
        m.into_iter().collect()
    };
    page.push_str(&chart("Consumer lag per stage", "records", &lag, faults, end));
    let (median, latency, bad) = per_minute(records, end);
    page.push_str(&chart("Request p50 per door, per minute", "s", &median, faults, end));
    page.push_str(&chart("Request p99 per door, per minute", "s", &latency, faults, end));
    page.push_str(&chart("Requests refused or failed, per minute", "", &bad, faults, end));
    let answers = points(&|s| s.answers.map(|v| v as f64));
    let docs = points(&|s| s.documents_live.map(|v| v as f64));
    page.push_str(&chart(
        "Answers produced, documents live",
        "",
        &[("answers".into(), answers), ("documents live".into(), docs)],
        faults,
        end,
    ));
    page.push_str("</html>\n");
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(door: &str, at: f64, secs: f64, status: u16) -> RequestRecord {
        RequestRecord { door: door.into(), at, secs, status }
    }

    fn sample(at: f64, rss: u64, fds: u64, pg: i64) -> Sample {
        Sample {
            at,
            rss_kib: [("run-all".to_string(), rss)].into(),
            fds: [("run-all".to_string(), fds)].into(),
            pg_connections: Some(pg + 20),
            run_all_connections: Some(pg),
            ..Sample::default()
        }
    }

    #[test]
    fn quantiles_take_the_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.99), 99.0);
        assert_eq!(quantile(&[3.0], 0.99), 3.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }

    #[test]
    fn windows_count_refusals_apart_from_latency() {
        let r = vec![
            rec("chat", 1.0, 2.0, 200),
            rec("chat", 2.0, 9.0, 503),
            rec("chat", 3.0, 0.1, 429),
            rec("chat", 4.0, 30.0, 0),
            rec("chat", 70.0, 1.0, 200),
        ];
        let w = &door_windows(&r, 0.0, 60.0)["chat"];
        assert_eq!((w.requests, w.refused_429, w.failed_5xx, w.no_answer), (4, 1, 1, 1));
        assert_eq!((w.p50, w.p99), (2.0, 2.0));
    }

    #[test]
    fn growth_and_drift_are_judged_after_the_warm_up() {
        let w = Windows::of(3600.0);
        assert_eq!((w.warmup, w.stretch), (600.0, 600.0));
        // Memory climbs in the warm-up, then holds; then creeps 10%.
        let flat: Vec<Sample> =
            (0..60).map(|m| sample(f64::from(m) * 60.0, if m < 10 { 50_000 + m as u64 * 5_000 } else { 100_000 }, 40, 9)).collect();
        let creeping: Vec<Sample> = (0..60).map(|m| sample(f64::from(m) * 60.0, 100_000 + m as u64 * 250, 40 + m as u64, 9)).collect();
        let records: Vec<RequestRecord> =
            (0..3600).step_by(10).map(|t| rec("page", f64::from(t), if t > 3000 { 1.25 } else { 1.0 }, 200)).collect();
        let v = judge(&flat, &records, &[], w);
        let get = |v: &[Verdict], f: &str| v.iter().find(|x| x.figure.starts_with(f)).cloned().unwrap();
        assert!(get(&v, "run-all resident").ok, "{v:?}");
        assert!(get(&v, "run-all open file").ok);
        assert!(get(&v, "page p99").ok, "1.25x exactly is within");
        let v = judge(&creeping, &records, &[], w);
        assert!(!get(&v, "run-all resident").ok, "{v:?}");
        assert!(!get(&v, "run-all open file").ok, "a descriptor a minute is a leak");
        let slower: Vec<RequestRecord> = records.iter().map(|r| rec("page", r.at, if r.at > 3000.0 { 1.5 } else { 1.0 }, 200)).collect();
        assert!(!get(&judge(&flat, &slower, &[], w), "page p99").ok);
    }

    #[test]
    fn requests_overlapping_a_restart_are_left_out_of_the_drift() {
        let faults = vec![Fault { at: 3300.0, kind: "restart".into(), target: "kafka".into() }];
        let mut records: Vec<RequestRecord> = (0..3600).step_by(10).map(|t| rec("chat", f64::from(t), 1.0, 200)).collect();
        records.push(rec("chat", 3296.0, 40.0, 200));
        records.push(rec("chat", 3350.0, 20.0, 200));
        assert!(near_restart(&records[records.len() - 1], &faults, RESTART_GRACE));
        assert!(near_restart(&records[records.len() - 2], &faults, RESTART_GRACE));
        assert!(!near_restart(&records[0], &faults, RESTART_GRACE));
        let v = judge(&[], &records, &faults, Windows::of(3600.0));
        assert!(v.iter().all(|v| v.ok), "{v:?}");
        // Begun well before the restart and still running at it: slow on
        // its own account, so it counts (leaving out by overlap would leave
        // out the slowest requests most surely).
        records.push(rec("chat", 3270.0, 60.0, 200));
        assert!(near_restart(&records[records.len() - 1], &faults, RESTART_GRACE), "a failure then is forgiven");
        assert!(!near_fault(&records[records.len() - 1], &faults), "but its latency is the drift's");
        assert!(!judge(&[], &records, &faults, Windows::of(3600.0)).iter().all(|v| v.ok));
    }

    #[test]
    fn answers_waiting_on_a_struck_answerer_are_left_out_of_the_drift_and_others_are_not() {
        let strike = |at: f64, target: &str| Fault { at, kind: "sigkill".into(), target: target.into() };
        let faults = vec![strike(3300.0, "answerer"), strike(3400.0, "parser")];
        let mut records: Vec<RequestRecord> = (0..3600).step_by(10).map(|t| rec("chat", f64::from(t), 1.0, 200)).collect();
        // In flight when the answerer was struck, and begun just after it.
        records.push(rec("chat", 3295.0, 9.0, 200));
        records.push(rec("chat", 3310.0, 8.0, 200));
        assert!(near_fault(&records[records.len() - 1], &faults) && near_fault(&records[records.len() - 2], &faults));
        let v = judge(&[], &records, &faults, Windows::of(3600.0));
        assert!(v.iter().all(|v| v.ok), "{v:?}");
        assert!(v[0].measured.contains("all 60 / 62 requests: 1.00 s -> 9.00 s"), "the raw figure is reported beside: {v:?}");
        // A struck parser is not on the answers' path: a slow answer then counts.
        records.push(rec("chat", 3405.0, 9.0, 200));
        assert!(!near_fault(&records[records.len() - 1], &faults));
        assert!(!judge(&[], &records, &faults, Windows::of(3600.0))[0].ok);
        // Nor does a struck answerer make a deletion wait.
        assert!(!near_fault(&rec("delete", 3301.0, 0.5, 200), &faults));
    }

    #[test]
    fn a_door_answered_first_and_not_last_fails_the_drift() {
        let records: Vec<RequestRecord> =
            (0..3600).step_by(10).map(|t| rec("mcp_ask", f64::from(t), 1.0, if t < 3000 { 200 } else { 503 })).collect();
        let v = judge(&[], &records, &[], Windows::of(3600.0));
        assert!(!v[0].ok, "{v:?}");
        // The revoked key's door is answered 401 by design: nothing to compare.
        let refused: Vec<RequestRecord> = (0..3600).step_by(300).map(|t| rec("revoked_key", f64::from(t), 0.01, 401)).collect();
        assert!(judge(&[], &refused, &[], Windows::of(3600.0)).is_empty());
        // Two a stretch: reported, not judged.
        let keys: Vec<RequestRecord> =
            (0..3600).step_by(300).map(|t| rec("keys", f64::from(t), if t > 3000 { 0.05 } else { 0.01 }, 201)).collect();
        let v = judge(&[], &keys, &[], Windows::of(3600.0));
        assert!(v[0].ok && v[0].measured.starts_with("not judged: 2 / 2"), "{v:?}");
    }

    #[test]
    fn disk_growth_is_per_thousand_documents() {
        let mut a = Sample { documents: Some(100), ..Sample::default() };
        a.disk_bytes.insert("broker".into(), 1_000_000);
        let mut b = Sample { documents: Some(600), ..Sample::default() };
        b.disk_bytes.insert("broker".into(), 6_000_000);
        assert_eq!(disk_per_thousand(&[a, b])["broker"], 10_000_000.0);
    }

    #[test]
    fn the_page_draws_every_figure_and_marks_faults() {
        let samples: Vec<Sample> = (0..5).map(|m| sample(f64::from(m) * 60.0, 100_000, 40, 9)).collect();
        let records = vec![rec("mcp_ask", 10.0, 1.5, 200)];
        let faults = vec![
            Fault { at: 90.0, kind: "restart".into(), target: "postgres".into() },
            Fault { at: 30.0, kind: "sigkill".into(), target: "parser".into() },
        ];
        let summary =
            serde_json::json!({"verdicts": [{"figure": "x <y>", "measured": "1", "limit": "2", "ok": false}], "invariants": {"lost": 0}});
        let page = html("Soak", &summary, &samples, &records, &faults, 300.0);
        assert_eq!(page.matches("<svg").count(), 9);
        assert!(page.contains("postgres restarted at 90 s") && page.contains("sigkill parser at 30 s"));
        assert!(page.contains("x &lt;y&gt;") && page.contains("NOT MET"));
        assert!(page.contains("&#9644; mcp_ask"));
        assert!(failed(&rec("chat", 0.0, 1.0, 0)) && failed(&rec("chat", 0.0, 1.0, 429)) && failed(&rec("chat", 0.0, 1.0, 502)));
        assert!(!failed(&rec("upload", 0.0, 1.0, 400)) && !failed(&rec("upload", 0.0, 1.0, 202)));
    }
}
