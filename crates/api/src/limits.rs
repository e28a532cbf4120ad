//! What one user may take of the service: requests per second, questions
//! per minute (each can cost an LLM call), event streams and uploads at
//! once. Over a limit the answer is 429 with `Retry-After` and the code of
//! the limit: `rate_limited`, `too_many_questions`, `too_many_streams`,
//! `too_many_uploads`.
//! Rates are GCRA buckets from `governor`, keyed by the caller (the token's
//! subject once its signature is checked, else the peer address), and
//! forgotten when idle; concurrent slots are counters released on drop.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use rag_telemetry::events::HttpInFlight;
use rag_telemetry::InternalEvent;

use crate::error::ApiError;
use crate::AppState;

/// The configurable limits (`API_*` settings of the binary).
#[derive(Debug, Clone)]
pub struct LimitsConfig {
    /// Sustained requests per second of one user (or address, unauthenticated).
    pub requests_per_sec: u32,
    /// Requests one user may send at once above that rate.
    pub request_burst: u32,
    /// Questions one user may ask per minute.
    pub questions_per_minute: u32,
    /// Event streams one user may hold open at once.
    pub streams_per_user: usize,
    /// Uploads of one user being received at once.
    pub uploads_per_user: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig { requests_per_sec: 20, request_burst: 100, questions_per_minute: 20, streams_per_user: 8, uploads_per_user: 4 }
    }
}

/// A `429 rate_limited`, with how long to wait.
#[derive(Debug)]
pub struct RateLimited {
    code: &'static str,
    message: String,
    retry_after: Duration,
}

impl From<RateLimited> for ApiError {
    fn from(r: RateLimited) -> Self {
        ApiError { retry_after: Some(r.retry_after), ..ApiError::new(StatusCode::TOO_MANY_REQUESTS, r.code, r.message) }
    }
}

type Keyed = DefaultKeyedRateLimiter<String>;

/// The limits' state, shared by every request of the process.
pub struct Limits {
    config: LimitsConfig,
    requests: Keyed,
    questions: Keyed,
    streams: Slots,
    uploads: Slots,
}

fn quota(per: Duration, count: u32, burst: u32) -> Quota {
    let burst = NonZeroU32::new(burst.max(1)).unwrap_or(NonZeroU32::MIN);
    // One cell every per/count; `with_period` refuses only a zero period.
    let period = per.checked_div(count.max(1)).filter(|p| !p.is_zero()).unwrap_or(Duration::from_nanos(1));
    Quota::with_period(period).unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN)).allow_burst(burst)
}

impl Limits {
    pub fn new(config: LimitsConfig) -> Self {
        let requests = RateLimiter::keyed(quota(Duration::from_secs(1), config.requests_per_sec, config.request_burst));
        // A minute's questions may come at once, then one per 60/n seconds.
        let questions = RateLimiter::keyed(quota(Duration::from_secs(60), config.questions_per_minute, config.questions_per_minute));
        Limits { config, requests, questions, streams: Slots::new("stream"), uploads: Slots::new("upload") }
    }

    fn check(limiter: &Keyed, key: &str, code: &'static str, what: &str) -> Result<(), RateLimited> {
        limiter.check_key(&key.to_string()).map_err(|not_until| {
            let retry_after = not_until.wait_time_from(DefaultClock::default().now());
            RateLimited { code, message: format!("too many {what}; retry after {} s", retry_after.as_secs().max(1)), retry_after }
        })
    }

    /// One more question of `user`.
    pub fn question(&self, user: &str) -> Result<(), RateLimited> {
        Self::check(&self.questions, user, "too_many_questions", "questions")
    }

    /// A slot for one more event stream of `user`, held until dropped.
    pub fn stream(&self, user: &str) -> Result<SlotGuard, RateLimited> {
        self.streams.take(user, self.config.streams_per_user, "too_many_streams", "event streams open at once")
    }

    /// A slot for one more upload of `user` in flight, held until dropped.
    pub fn upload(&self, user: &str) -> Result<SlotGuard, RateLimited> {
        self.uploads.take(user, self.config.uploads_per_user, "too_many_uploads", "uploads at once")
    }

    /// Drops the buckets of keys idle long enough to be full again.
    pub fn forget_idle(&self) {
        self.requests.retain_recent();
        self.questions.retain_recent();
        self.requests.shrink_to_fit();
        self.questions.shrink_to_fit();
    }
}

/// Counters of things held at once, per user; their total is exported
/// (`rag_http_in_flight{kind}`), so that a stream a client dropped and the
/// server never released shows.
#[derive(Clone)]
struct Slots {
    held: Arc<Mutex<HashMap<String, usize>>>,
    kind: &'static str,
}

impl Slots {
    fn new(kind: &'static str) -> Slots {
        Slots { held: Arc::default(), kind }
    }

    fn take(&self, user: &str, max: usize, code: &'static str, what: &str) -> Result<SlotGuard, RateLimited> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let n = held.entry(user.to_string()).or_insert(0);
        if *n >= max.max(1) {
            return Err(RateLimited { code, message: format!("too many {what} (at most {max})"), retry_after: Duration::from_secs(5) });
        }
        *n += 1;
        HttpInFlight { kind: self.kind, count: held.values().sum() }.emit();
        Ok(SlotGuard { slots: self.clone(), user: user.to_string() })
    }
}

/// A held slot; released when dropped (the stream ends, the upload is answered).
pub struct SlotGuard {
    slots: Slots,
    user: String,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        let mut held = self.slots.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = held.get_mut(&self.user) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                held.remove(&self.user);
            }
        }
        HttpInFlight { kind: self.slots.kind, count: held.values().sum() }.emit();
    }
}

/// The request-rate limit, before any handler runs: keyed by the caller's
/// verified user id, else by the peer address.
pub async fn limit_requests(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let caller = match crate::caller::bearer(req.headers()) {
        Ok(token) => crate::caller::authenticate(&state, token).await.ok(),
        Err(_) => None,
    };
    // An API key counts against its user's limits, as their sign-in does.
    let user = caller.as_ref().map(|c| format!("user:{}", c.user_id));
    if let Some(caller) = caller {
        req.extensions_mut().insert(caller);
    }
    let key = user.unwrap_or_else(|| match req.extensions().get::<ConnectInfo<SocketAddr>>() {
        Some(ConnectInfo(addr)) => address_key(addr.ip()),
        None => "addr:unknown".to_string(),
    });
    if let Err(limited) = Limits::check(&state.limits().requests, &key, "rate_limited", "requests") {
        return ApiError::from(limited).into_response();
    }
    next.run(req).await
}

/// The bucket of an unauthenticated caller: its IPv4 address, or the /64
/// of its IPv6 one (a client is usually given a whole /64 and could take a
/// fresh address for every request).
fn address_key(ip: std::net::IpAddr) -> String {
    match ip {
        std::net::IpAddr::V4(v4) => format!("addr:{v4}"),
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => format!("addr:{v4}"),
            None => {
                let s = v6.segments();
                format!("addr:{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_callers_share_the_bucket_of_their_64() {
        let a: std::net::IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: std::net::IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let other: std::net::IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(address_key(a), address_key(b));
        assert_ne!(address_key(a), address_key(other));
        assert_eq!(address_key("::ffff:10.1.2.3".parse().unwrap()), "addr:10.1.2.3");
    }

    #[test]
    fn a_burst_then_the_rate_and_slots_come_back_when_dropped() {
        let limits = Limits::new(LimitsConfig {
            requests_per_sec: 1,
            request_burst: 3,
            questions_per_minute: 2,
            streams_per_user: 2,
            uploads_per_user: 1,
        });
        for _ in 0..3 {
            Limits::check(&limits.requests, "alice", "rate_limited", "requests").unwrap();
        }
        let limited = Limits::check(&limits.requests, "alice", "rate_limited", "requests").unwrap_err();
        assert!(limited.retry_after <= Duration::from_secs(1), "{limited:?}");
        // Another user has a bucket of their own.
        Limits::check(&limits.requests, "bob", "rate_limited", "requests").unwrap();
        limits.question("alice").unwrap();
        limits.question("alice").unwrap();
        assert!(limits.question("alice").unwrap_err().retry_after > Duration::from_secs(20));
        let (a, _b) = (limits.stream("alice").unwrap(), limits.stream("alice").unwrap());
        assert!(limits.stream("alice").is_err());
        drop(a);
        let _c = limits.stream("alice").unwrap();
        let up = limits.upload("alice").unwrap();
        assert!(limits.upload("alice").is_err());
        drop(up);
        assert!(limits.upload("alice").is_ok());
    }
}
