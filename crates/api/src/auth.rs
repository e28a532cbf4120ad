//! Bearer-token authentication: HS256 JWTs with Supabase-compatible claims
//! (`sub` is the user id, `exp` is enforced, `aud` is checked when set).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::AppState;

/// Shortest accepted secret: HS256 with less than 256 bits of key is weak.
pub const MIN_SECRET_BYTES: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("JWT_SECRET must be at least {MIN_SECRET_BYTES} bytes (it has {0})")]
    WeakSecret(usize),
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
}

impl std::fmt::Debug for JwtAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtAuth").field("audience", &self.audience).finish_non_exhaustive()
    }
}

impl JwtAuth {
    /// `audience` empty or `None`: the `aud` claim is not checked.
    pub fn new(secret: &str, audience: Option<&str>) -> Result<Self, AuthError> {
        if secret.len() < MIN_SECRET_BYTES {
            return Err(AuthError::WeakSecret(secret.len()));
        }
        let audience = audience.filter(|a| !a.is_empty()).map(str::to_string);
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_required_spec_claims(&["exp", "sub"]);
        // Clock skew between the token issuer and us.
        validation.leeway = 30;
        match &audience {
            Some(aud) => validation.set_audience(&[aud]),
            None => validation.validate_aud = false,
        }
        Ok(JwtAuth {
            encoding: EncodingKey::from_secret(secret.as_bytes()),
            decoding: DecodingKey::from_secret(secret.as_bytes()),
            validation,
            audience,
        })
    }

    pub fn verify(&self, token: &str) -> Result<Claims, ApiError> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind;
            let why = match e.kind() {
                ErrorKind::ExpiredSignature => "the token has expired",
                ErrorKind::InvalidSignature => "the token's signature is not valid",
                ErrorKind::InvalidAudience => "the token is for another audience",
                ErrorKind::InvalidAlgorithm => "the token must be signed with HS256",
                ErrorKind::MissingRequiredClaim(_) => "the token lacks a required claim (sub, exp)",
                _ => "the token is malformed",
            };
            ApiError::unauthorized(why)
        })?;
        let sub = data.claims.sub.trim();
        if sub.is_empty() || sub.len() > 256 {
            return Err(ApiError::unauthorized("the token's subject (sub) is empty or too long"));
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
            role: Some("authenticated".into()),
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding).map_err(|e| AuthError::Mint(e.to_string()))
    }
}

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub struct AuthUser {
    pub user_id: String,
}

impl FromRequestParts<AppState> for AuthUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .ok_or_else(|| ApiError::unauthorized("missing Authorization: Bearer <token>"))?;
        let value = header.to_str().map_err(|_| ApiError::unauthorized("the Authorization header is not text"))?;
        let token = value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ApiError::unauthorized("the Authorization header must be `Bearer <token>`"))?;
        let claims = state.auth().verify(token)?;
        Ok(AuthUser { user_id: claims.sub.trim().to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn round_trip_and_rejections() {
        let auth = JwtAuth::new(SECRET, Some("authenticated")).unwrap();
        let token = auth.mint("user-1", Duration::from_secs(60)).unwrap();
        assert_eq!(auth.verify(&token).unwrap().sub, "user-1");

        let other_secret = JwtAuth::new("another-secret-another-secret-000", Some("authenticated")).unwrap();
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
        let claims = Claims { sub: "u".into(), exp: now - 120, iat: now - 3600, aud: None, role: None };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(SECRET.as_bytes())).unwrap();
        assert_eq!(auth.verify(&token).unwrap_err().message, "the token has expired");
    }
}
