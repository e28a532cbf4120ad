//! Bearer-token authentication: HS256 JWTs with Supabase-compatible claims
//! (`sub` is the user id, `exp` is enforced, `aud` is checked when set).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// Installs the HS256 signer jsonwebtoken uses in this process (ring's
/// HMAC, see `jwt_crypto`); [`JwtAuth::new`] does it, so only code that
/// calls jsonwebtoken without a `JwtAuth` (tests minting odd tokens) needs to.
pub use crate::jwt_crypto::install as install_jwt_crypto;

/// Shortest accepted secret: HS256 with less than 256 bits of key is weak.
pub const MIN_SECRET_BYTES: usize = 32;

/// Longest token lifetime accepted by default (`exp` - `iat`, and `exp` -
/// now): a token minted for a century is a password that never changes.
pub const DEFAULT_MAX_TOKEN_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// Secrets that were published as examples or defaults: whoever reads them
/// can sign a token for any user.
const KNOWN_SECRETS: &[&str] = &["change-me-to-32-or-more-random-bytes!!", "super-secret-jwt-token-with-at-least-32-characters-long"];

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("JWT_SECRET must be at least {MIN_SECRET_BYTES} bytes (it has {0})")]
    WeakSecret(usize),
    #[error("JWT_SECRET is a published example or default secret; generate one (e.g. `openssl rand -base64 48`)")]
    KnownSecret,
    #[error("JWT_SECRET has only {0} distinct characters: too little entropy for HS256; generate one (e.g. `openssl rand -base64 48`)")]
    LowEntropySecret(usize),
    #[error("JWT_SECRET repeats itself (8 characters or more recur): it is guessable; generate one (e.g. `openssl rand -base64 48`)")]
    RepeatedSecret,
    #[error("minting a token: {0}")]
    Mint(String),
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Claims {
    /// The user id.
    pub sub: String,
    /// Expiry, seconds since the epoch.
    pub exp: u64,
    /// Issued at, seconds since the epoch.
    #[serde(default)]
    pub iat: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aud: Option<String>,
    /// Not before, seconds since the epoch (checked when present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<u64>,
    /// Supabase puts `authenticated` here; informative only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

#[derive(Clone)]
pub struct JwtAuth {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    audience: Option<String>,
    max_ttl: Duration,
}

impl std::fmt::Debug for JwtAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtAuth").field("audience", &self.audience).finish_non_exhaustive()
    }
}

impl JwtAuth {
    /// `audience` empty or `None`: the `aud` claim is not checked.
    /// With an audience, tokens must carry it in `aud`.
    pub fn new(secret: &str, audience: Option<&str>) -> Result<Self, AuthError> {
        check_secret(secret)?;
        install_jwt_crypto();
        let audience = audience.filter(|a| !a.is_empty()).map(str::to_string);
        let mut validation = Validation::new(Algorithm::HS256);
        // Clock skew between the token issuer and us.
        validation.leeway = 30;
        validation.validate_nbf = true;
        match &audience {
            Some(aud) => {
                validation.set_required_spec_claims(&["exp", "sub", "aud"]);
                validation.set_audience(&[aud]);
            }
            None => {
                validation.set_required_spec_claims(&["exp", "sub"]);
                validation.validate_aud = false;
            }
        }
        Ok(JwtAuth {
            encoding: EncodingKey::from_secret(secret.as_bytes()),
            decoding: DecodingKey::from_secret(secret.as_bytes()),
            validation,
            audience,
            max_ttl: DEFAULT_MAX_TOKEN_TTL,
        })
    }

    /// Tokens living longer than `ttl` are refused (`JWT_MAX_TTL_SECS`).
    pub fn with_max_ttl(mut self, ttl: Duration) -> Self {
        self.max_ttl = ttl;
        self
    }

    pub fn max_ttl(&self) -> Duration {
        self.max_ttl
    }

    pub fn verify(&self, token: &str) -> Result<Claims, ApiError> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind;
            let why = match e.kind() {
                ErrorKind::ExpiredSignature => "the token has expired",
                ErrorKind::InvalidSignature => "the token's signature is not valid",
                ErrorKind::InvalidAudience => "the token is for another audience",
                ErrorKind::InvalidAlgorithm => "the token must be signed with HS256",
                ErrorKind::MissingRequiredClaim(_) => "the token lacks a required claim (sub, exp, aud)",
                ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)",
                _ => "the token is malformed",
            };
            ApiError::unauthorized(why)
        })?;
        let sub = data.claims.sub.trim();
        if sub.is_empty() || sub.len() > 256 {
            return Err(ApiError::unauthorized("the token's subject (sub) is empty or too long"));
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let max = self.max_ttl.as_secs();
        let lives = |from: u64| data.claims.exp.saturating_sub(from) > max.saturating_add(self.validation.leeway);
        if lives(now) || (data.claims.iat > 0 && lives(data.claims.iat)) {
            return Err(ApiError::unauthorized(format!("the token lives longer than the {max} s allowed; ask for a shorter-lived one")));
        }
        Ok(data.claims)
    }

    /// A token for `user`, valid for `ttl` (the `token` command; tests).
    pub fn mint(&self, user: &str, ttl: Duration) -> Result<String, AuthError> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let claims = Claims {
            sub: user.to_string(),
            exp: now + ttl.as_secs(),
            iat: now,
            aud: self.audience.clone(),
            nbf: None,
            role: Some("authenticated".into()),
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding).map_err(|e| AuthError::Mint(e.to_string()))
    }
}

/// Refuses secrets anyone could know or guess.
fn check_secret(secret: &str) -> Result<(), AuthError> {
    if secret.len() < MIN_SECRET_BYTES {
        return Err(AuthError::WeakSecret(secret.len()));
    }
    if KNOWN_SECRETS.contains(&secret) || secret.to_ascii_lowercase().contains("change-me") {
        return Err(AuthError::KnownSecret);
    }
    let distinct = secret.bytes().collect::<std::collections::HashSet<u8>>().len();
    // 32 random base64 or hex characters have 14 or more distinct ones
    // with overwhelming probability; "aaaa…" or "abababab…" have 1 or 2.
    if distinct < 10 {
        return Err(AuthError::LowEntropySecret(distinct));
    }
    // A word said twice ("passwordpassword…") is a guessable secret; 8
    // characters recurring in random base64 or hex is all but impossible.
    let b = secret.as_bytes();
    let repeated = (0..b.len().saturating_sub(8)).any(|i| b[i + 1..].windows(8).any(|w| w == &b[i..i + 8]));
    if repeated {
        return Err(AuthError::RepeatedSecret);
    }
    Ok(())
}

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub struct AuthUser {
    pub user_id: String,
    /// When the caller's token expires (seconds since the epoch): an event
    /// stream opened with it ends then.
    pub expires_at: u64,
    /// The one workspace an API key is for; None: every workspace of the
    /// user (a sign-in token, or a key for all of them).
    pub workspace: Option<String>,
    /// The API key the caller came with; None for a sign-in token (JWT).
    pub key_id: Option<uuid::Uuid>,
}

impl AuthUser {
    /// Whether the caller may reach workspace `ws` at all (ownership is
    /// checked apart): a key for one workspace reaches only that one.
    pub fn reaches(&self, ws: &str) -> bool {
        self.workspace.as_deref().is_none_or(|w| w == ws)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "Zx8q2LmN5vB7cR1tY4wE9uI3oP6aS0dF";

    #[test]
    fn round_trip_and_rejections() {
        let auth = JwtAuth::new(SECRET, Some("authenticated")).unwrap();
        let token = auth.mint("user-1", Duration::from_secs(60)).unwrap();
        assert_eq!(auth.verify(&token).unwrap().sub, "user-1");

        let other_secret = JwtAuth::new("Q7w2E9r4T1y6U3i8O5p0A2s7D4f9G1h6", Some("authenticated")).unwrap();
        let forged = other_secret.mint("user-1", Duration::from_secs(60)).unwrap();
        assert_eq!(auth.verify(&forged).unwrap_err().message, "the token's signature is not valid");

        let other_aud = JwtAuth::new(SECRET, Some("someone-else")).unwrap();
        let wrong_aud = other_aud.mint("user-1", Duration::from_secs(60)).unwrap();
        assert_eq!(auth.verify(&wrong_aud).unwrap_err().message, "the token is for another audience");

        assert_eq!(auth.verify("not.a.token").unwrap_err().code, "unauthorized");
        assert!(matches!(JwtAuth::new("short", None), Err(AuthError::WeakSecret(5))));
    }

    #[test]
    fn expired_tokens_are_refused_beyond_the_leeway() {
        let auth = JwtAuth::new(SECRET, None).unwrap();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        let claims = Claims { sub: "u".into(), exp: now - 120, iat: now - 3600, aud: None, nbf: None, role: None };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap();
        assert_eq!(auth.verify(&token).unwrap_err().message, "the token has expired");
    }

    fn signed(claims: serde_json::Value) -> String {
        install_jwt_crypto();
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap()
    }

    #[test]
    fn audience_not_before_and_lifetime_are_enforced() {
        let auth = JwtAuth::new(SECRET, Some("authenticated")).unwrap();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        let no_aud = signed(serde_json::json!({"sub": "u", "exp": now + 60, "iat": now}));
        assert!(auth.verify(&no_aud).unwrap_err().message.contains("required claim"));
        let early = signed(serde_json::json!({"sub": "u", "exp": now + 600, "iat": now, "nbf": now + 300, "aud": "authenticated"}));
        assert_eq!(auth.verify(&early).unwrap_err().message, "the token is not valid yet (nbf)");
        let century = signed(serde_json::json!({"sub": "u", "exp": now + 100 * 365 * 86_400, "iat": now, "aud": "authenticated"}));
        assert!(auth.verify(&century).unwrap_err().message.contains("lives longer"));
        // Without iat, the remaining lifetime alone is judged.
        let no_iat = signed(serde_json::json!({"sub": "u", "exp": now + 30 * 86_400, "aud": "authenticated"}));
        assert!(auth.verify(&no_iat).unwrap_err().message.contains("lives longer"));
        let fine = signed(serde_json::json!({"sub": "u", "exp": now + 3600, "iat": now, "nbf": now, "aud": "authenticated"}));
        assert_eq!(auth.verify(&fine).unwrap().sub, "u");
        let short = auth.with_max_ttl(Duration::from_secs(600));
        assert!(short.verify(&fine).unwrap_err().message.contains("lives longer"));
    }

    #[test]
    fn published_and_low_entropy_secrets_are_refused() {
        assert!(matches!(JwtAuth::new("change-me-to-32-or-more-random-bytes!!", None), Err(AuthError::KnownSecret)));
        assert!(matches!(JwtAuth::new(&"ab".repeat(20), None), Err(AuthError::LowEntropySecret(2))));
        assert!(matches!(JwtAuth::new("passwordpasswordpassword12345678", None), Err(AuthError::RepeatedSecret)));
        assert!(JwtAuth::new("kq3V9xPz7LmN2bR8tY5wC1dF6gH4jS0aE", None).is_ok());
    }
}
