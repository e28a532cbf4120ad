//! Crash-test hooks. `RAG_ENGINE_FAILPOINT=<name>:<n>` makes the process
//! stop dead at the n-th time it reaches the named point: it prints
//! `FAILPOINT <name> reached` on stderr and hangs, so a test can SIGKILL it
//! at exactly that moment. Compiled in with the `failpoints` feature only
//! (the test command's build); without it `from_env` never sets one, and a
//! `hit` is an immediate return.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug)]
pub struct Failpoint {
    name: String,
    at: u64,
    seen: AtomicU64,
}

impl Failpoint {
    /// Parses `name:n` (n defaults to 1).
    pub fn parse(spec: &str) -> Option<Failpoint> {
        let spec = spec.trim();
        if spec.is_empty() {
            return None;
        }
        let (name, at) = match spec.split_once(':') {
            Some((n, a)) => (n, a.parse().ok()?),
            None => (spec, 1),
        };
        Some(Failpoint { name: name.to_string(), at, seen: AtomicU64::new(0) })
    }

    #[cfg(feature = "failpoints")]
    pub fn from_env() -> Option<Failpoint> {
        std::env::var("RAG_ENGINE_FAILPOINT").ok().and_then(|s| Failpoint::parse(&s))
    }

    /// Without the `failpoints` feature the variable is not read at all.
    #[cfg(not(feature = "failpoints"))]
    pub fn from_env() -> Option<Failpoint> {
        None
    }

    /// Hangs forever (until killed) when this is the configured hit.
    pub async fn hit(this: &Option<Failpoint>, name: &str) {
        let Some(fp) = this else { return };
        if fp.name != name {
            return;
        }
        if fp.seen.fetch_add(1, Ordering::SeqCst) + 1 == fp.at {
            eprintln!("FAILPOINT {name} reached");
            std::future::pending::<()>().await;
        }
    }
}
