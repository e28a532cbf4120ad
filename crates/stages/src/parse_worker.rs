//! Parsing (and OCR) in a child process, so that no upload can take the
//! service down: a stack overflow, an out-of-memory or a runaway loop in a
//! parser (ours, the vendored pdf-extract, html5ever, lopdf, tesseract)
//! ends the child, never the process that runs the API and the other
//! stages. The child is this same executable started with
//! [`WORKER_ARG`]; it limits its own address space and CPU time
//! (`setrlimit`, inherited by the OCR programs it runs), asks to die with
//! its parent, and answers one document on stdout. The parent bounds the
//! wall-clock time, the size of the answer and the number of children at
//! once, and kills the child's whole process group when the time is up or
//! the process shuts down (docs/pipeline.md, "Isolation").

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rag_bus::FailureCode;
use rag_docparse::{Limits, ParsedDocument};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::ocr::TesseractOcr;

/// The first argument that makes the executable a parse worker.
pub const WORKER_ARG: &str = "__parse-worker";

/// What the parent sends: one line of JSON, then the document's bytes.
#[derive(Debug, Serialize, Deserialize)]
struct WorkRequest {
    content_type: String,
    filename: String,
    limits: Limits,
    ocr: Option<TesseractOcr>,
    memory_bytes: u64,
    cpu_secs: u64,
}

/// What the worker answers on stdout.
#[derive(Debug, Serialize, Deserialize)]
enum WorkReply {
    Parsed(Box<ParsedDocument>),
    Refused { code: String, message: String },
}

/// How one document's parse ended.
#[derive(Debug)]
pub enum WorkOutcome {
    Parsed(Box<ParsedDocument>),
    /// The parser refused the document ([`rag_docparse::ParseError`]'s code).
    Refused {
        code: String,
        message: String,
    },
    /// The worker died or ran out of time on this document: `too_deep`,
    /// `out_of_memory`, `parser_timeout` or `parser_crashed`.
    Crashed {
        code: FailureCode,
        message: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The process is shutting down: the document is parsed again after
    /// the restart.
    #[error("interrupted by shutdown")]
    Interrupted,
    /// The worker was killed by a signal this process did not send (the
    /// host's OOM killer, an operator): tried again, up to the attempts.
    #[error("the parse worker was killed from outside (SIGKILL)")]
    Killed,
    /// The worker could not be started (a problem of this machine, not of
    /// the document: retried).
    #[error("starting the parse worker {exe}: {source}")]
    Spawn {
        exe: String,
        #[source]
        source: std::io::Error,
    },
}

/// Bounds of the worker processes (`PARSER_*` settings).
#[derive(Debug, Clone)]
pub struct WorkerLimits {
    /// Address space of a worker, in bytes (its OCR programs each get the same).
    pub memory_bytes: u64,
    /// Wall-clock time for one document, OCR included.
    pub timeout: Duration,
    /// Workers running at once in this process.
    pub concurrency: usize,
}

/// Starts parse workers.
#[derive(Debug, Clone)]
pub struct ParseWorkers {
    exe: PathBuf,
    limits: WorkerLimits,
    slots: Arc<tokio::sync::Semaphore>,
}

/// Bytes of answer per character of output budget: the text twice (the
/// full text and the segments), JSON escaping and the boxes of each line,
/// generously. Past it the worker is broken or hostile.
const REPLY_BYTES_PER_CHAR: u64 = 8;
/// The end of a worker's stderr kept to tell why it died.
const STDERR_TAIL: usize = 16 * 1024;

impl ParseWorkers {
    /// Workers run `exe` (normally this process's own executable).
    pub fn new(exe: PathBuf, limits: WorkerLimits) -> Self {
        let slots = Arc::new(tokio::sync::Semaphore::new(limits.concurrency.max(1)));
        ParseWorkers { exe, limits, slots }
    }

    pub fn limits(&self) -> &WorkerLimits {
        &self.limits
    }

    /// Parses `bytes` in a fresh worker. `Err` only when the document was
    /// not judged: shutdown, or no worker could be started.
    pub async fn parse(
        &self,
        bytes: &[u8],
        content_type: &str,
        filename: &str,
        limits: &Limits,
        ocr: Option<&TesseractOcr>,
        shutdown: &CancellationToken,
    ) -> Result<WorkOutcome, WorkerError> {
        let _slot = tokio::select! {
            _ = shutdown.cancelled() => return Err(WorkerError::Interrupted),
            slot = self.slots.acquire() => slot.map_err(|_| WorkerError::Interrupted)?,
        };
        let request = WorkRequest {
            content_type: content_type.to_string(),
            filename: filename.to_string(),
            limits: limits.clone(),
            ocr: ocr.cloned(),
            memory_bytes: self.limits.memory_bytes,
            // The parent's deadline decides; this only stops a worker whose
            // parent is gone and that kept computing.
            cpu_secs: self.limits.timeout.as_secs() + 5,
        };
        let mut header =
            serde_json::to_vec(&request).map_err(|e| WorkerError::Spawn { exe: self.exe.display().to_string(), source: e.into() })?;
        header.push(b'\n');
        let mut child = tokio::process::Command::new(&self.exe)
            .arg(WORKER_ARG)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: a timeout or shutdown kills the OCR
            // programs it started along with it.
            .process_group(0)
            .kill_on_drop(true)
            .env("RUST_BACKTRACE", "0")
            .spawn()
            .map_err(|source| WorkerError::Spawn { exe: self.exe.display().to_string(), source })?;
        let pid = child.id();
        let (Some(mut stdin), Some(mut stdout), Some(mut stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
            kill_group(pid);
            return Err(WorkerError::Spawn { exe: self.exe.display().to_string(), source: std::io::Error::other("no pipes") });
        };
        let feed = async {
            // A worker that dies early closes its stdin: not our error.
            let _ = stdin.write_all(&header).await;
            let _ = stdin.write_all(bytes).await;
            drop(stdin);
        };
        let max_reply = limits.max_output_chars(bytes.len()).saturating_mul(REPLY_BYTES_PER_CHAR).saturating_add(1 << 20);
        let read_out = async move {
            let mut out = Vec::new();
            let _ = (&mut stdout).take(max_reply + 1).read_to_end(&mut out).await;
            // Closing our end: a worker still writing gets EPIPE and exits
            // instead of blocking until the deadline.
            drop(stdout);
            out
        };
        let read_err = async {
            let mut tail = Vec::new();
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > 2 * STDERR_TAIL {
                    tail.drain(..tail.len() - STDERR_TAIL);
                }
            }
            tail
        };
        let work = async {
            let ((), out, err) = tokio::join!(feed, read_out, read_err);
            let status = child.wait().await;
            (out, err, status)
        };
        // `biased`: a finished worker (reaped by `wait`) must win over a
        // deadline reached at the same moment. Only an unreaped worker's
        // group may be signalled: once reaped, its id can be reused, and
        // Postgres backends, for one, lead process groups of their own.
        let (out, err, status) = tokio::select! {
            biased;
            done = work => done,
            _ = shutdown.cancelled() => {
                kill_group(pid);
                return Err(WorkerError::Interrupted);
            }
            _ = tokio::time::sleep(self.limits.timeout) => {
                kill_group(pid);
                return Ok(WorkOutcome::Crashed {
                    code: FailureCode::ParserTimeout,
                    message: format!("parsing took longer than {} s and was stopped", self.limits.timeout.as_secs()),
                });
            }
        };
        let stderr = String::from_utf8_lossy(&err);
        match status {
            _ if out.len() as u64 > max_reply => Ok(WorkOutcome::Crashed {
                code: FailureCode::OutputTooLarge,
                message: format!("the parsed document is over {max_reply} bytes"),
            }),
            Ok(s) if s.success() => match serde_json::from_slice::<WorkReply>(&out) {
                Ok(WorkReply::Parsed(doc)) => Ok(WorkOutcome::Parsed(doc)),
                Ok(WorkReply::Refused { code, message }) => Ok(WorkOutcome::Refused { code, message }),
                Err(e) => Ok(WorkOutcome::Crashed {
                    code: FailureCode::ParserCrashed,
                    message: format!("the parser's answer was unreadable: {e}"),
                }),
            },
            // Our own kills (deadline, shutdown) returned above: a SIGKILL
            // here came from outside.
            Ok(s) if s.signal() == Some(libc::SIGKILL) && !stderr.contains("memory allocation of") => Err(WorkerError::Killed),
            Ok(s) => Ok(classify_death(s, &stderr, self.limits.memory_bytes)),
            Err(e) => {
                Ok(WorkOutcome::Crashed { code: FailureCode::ParserCrashed, message: format!("the parser could not be waited for: {e}") })
            }
        }
    }
}

/// Why a worker that did not exit cleanly died, for the document's
/// failure (the user reads it) and the dead letter.
fn classify_death(status: std::process::ExitStatus, stderr: &str, memory_bytes: u64) -> WorkOutcome {
    let mib = memory_bytes >> 20;
    if stderr.contains("has overflowed its stack") {
        return WorkOutcome::Crashed { code: FailureCode::TooDeep, message: "the document is nested too deeply to be read".into() };
    }
    if stderr.contains("memory allocation of") || stderr.contains("out of memory") {
        return WorkOutcome::Crashed {
            code: FailureCode::OutOfMemory,
            message: format!("reading the document needs more than the parser's {mib} MiB of memory"),
        };
    }
    if status.signal() == Some(libc::SIGXCPU) {
        return WorkOutcome::Crashed { code: FailureCode::ParserTimeout, message: "parsing used up its CPU time and was stopped".into() };
    }
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").chars().take(300).collect::<String>();
    let how = match status.signal() {
        Some(sig) => format!("signal {sig}"),
        None => format!("exit status {}", status.code().unwrap_or(-1)),
    };
    WorkOutcome::Crashed {
        code: FailureCode::ParserCrashed,
        message: if last.is_empty() {
            format!("the parser stopped on this document ({how})")
        } else {
            format!("the parser stopped on this document ({how}: {last})")
        },
    }
}

/// SIGKILL to the worker's process group (the worker and its OCR programs).
/// Only for a worker not yet reaped: its pid, and so the group id, is still
/// its own.
fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| libc::pid_t::try_from(p).ok()) {
        // SAFETY: killpg only sends a signal; the group is the worker's own
        // (process_group(0) made its pid the group id), and a group already
        // gone is an ESRCH we ignore.
        unsafe {
            libc::killpg(pid, libc::SIGKILL);
        }
    }
}

/// The worker's side: limits itself, reads one request from stdin,
/// answers on stdout. Returns the exit code.
pub fn serve() -> i32 {
    // First of all: a parent that dies from here on takes this worker with
    // it; one already gone (we are the init's child then) means no one
    // waits for the answer.
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and changes
    // only this process's own attribute; getppid cannot fail.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        if libc::getppid() == 1 {
            return 2;
        }
    }
    let mut input = Vec::new();
    if let Err(e) = std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut input) {
        eprintln!("parse worker: reading the request: {e}");
        return 2;
    }
    let Some(split) = input.iter().position(|b| *b == b'\n') else {
        eprintln!("parse worker: no request line");
        return 2;
    };
    let request: WorkRequest = match serde_json::from_slice(&input[..split]) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("parse worker: bad request: {e}");
            return 2;
        }
    };
    confine(request.memory_bytes, request.cpu_secs);
    let bytes = &input[split + 1..];
    let ocr = request.ocr.as_ref().map(|o| o as &dyn rag_docparse::PageOcr);
    let reply = match rag_docparse::parse_with_ocr(bytes, &request.content_type, &request.filename, &request.limits, ocr) {
        Ok(doc) => WorkReply::Parsed(Box::new(doc)),
        Err(e) => WorkReply::Refused { code: e.code().to_string(), message: e.to_string() },
    };
    let out = std::io::stdout().lock();
    match serde_json::to_writer(std::io::BufWriter::new(out), &reply) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("parse worker: writing the answer: {e}");
            3
        }
    }
}

/// Limits this process (and what it starts) to `memory_bytes` of address
/// space and `cpu_secs` of CPU.
fn confine(memory_bytes: u64, cpu_secs: u64) {
    let limit = |resource, soft: u64, hard: u64| {
        let lim = libc::rlimit { rlim_cur: soft as libc::rlim_t, rlim_max: hard as libc::rlim_t };
        // SAFETY: setrlimit reads the struct we pass; lowering our own
        // limits is always allowed.
        if unsafe { libc::setrlimit(resource, &lim) } != 0 {
            eprintln!("parse worker: setrlimit failed: {}", std::io::Error::last_os_error());
        }
    };
    limit(libc::RLIMIT_AS, memory_bytes, memory_bytes);
    // The soft limit sends SIGXCPU (told apart as `parser_timeout`); the
    // hard one, 5 s later, SIGKILL.
    limit(libc::RLIMIT_CPU, cpu_secs, cpu_secs + 5);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deaths_are_told_apart() {
        let abort = std::process::ExitStatus::from_raw(libc::SIGABRT);
        let code = |o: WorkOutcome| match o {
            WorkOutcome::Crashed { code, .. } => code,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            code(classify_death(abort, "\nthread 'main' has overflowed its stack\nfatal runtime error: stack overflow\n", 1 << 30)),
            FailureCode::TooDeep
        );
        assert_eq!(code(classify_death(abort, "memory allocation of 4096 bytes failed\n", 1 << 30)), FailureCode::OutOfMemory);
        assert_eq!(code(classify_death(std::process::ExitStatus::from_raw(libc::SIGXCPU), "", 1 << 30)), FailureCode::ParserTimeout);
        match classify_death(std::process::ExitStatus::from_raw(libc::SIGSEGV), "boom\n\n", 1 << 30) {
            WorkOutcome::Crashed { code: FailureCode::ParserCrashed, message } => {
                assert!(message.contains("signal 11") && message.contains("boom"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }
}
