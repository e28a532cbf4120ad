//! API keys as credentials: `rag_<lookup>_<secret>`, where `lookup` (12 hex
//! digits) is public and finds the key, and the whole token's SHA-256 is
//! what is stored. A key stands for its user ([`AuthUser`]) in one
//! workspace or in all of theirs, until it expires or is revoked; it is
//! checked on every request, so a revocation holds from the next one.

use std::time::{SystemTime, UNIX_EPOCH};

use ring::rand::SecureRandom;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::AppState;
use rag_store::sqlx::PgPool;

/// How every key starts: tells a key from a JWT, and lets secret scanners
/// recognise a leaked one.
pub const PREFIX: &str = "rag_";
const LOOKUP_HEX: usize = 12;
const SECRET_HEX: usize = 64;

/// A freshly made key: the token shown once, its public lookup part and
/// the hash that is stored.
pub struct MintedKey {
    pub token: String,
    pub lookup: String,
    pub sha256: Vec<u8>,
}

/// Makes a key from the system's secure random source (38 random bytes: 6
/// for the lookup, 32 for the secret).
pub fn mint() -> Result<MintedKey, ApiError> {
    let mut bytes = [0u8; LOOKUP_HEX / 2 + SECRET_HEX / 2];
    ring::rand::SystemRandom::new().fill(&mut bytes).map_err(|_| ApiError::internal("no secure random source"))?;
    let lookup = hex::encode(&bytes[..LOOKUP_HEX / 2]);
    let token = format!("{PREFIX}{lookup}_{}", hex::encode(&bytes[LOOKUP_HEX / 2..]));
    let sha256 = hash(&token);
    Ok(MintedKey { token, lookup, sha256 })
}

pub fn hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Whether a bearer token is written as a key (then it is never tried as
/// a JWT).
pub fn looks_like_key(token: &str) -> bool {
    token.starts_with(PREFIX)
}

/// The lookup part of a well-formed key.
pub fn lookup_of(token: &str) -> Option<&str> {
    let rest = token.strip_prefix(PREFIX)?;
    let (lookup, secret) = rest.split_once('_')?;
    let hexes = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    (hexes(lookup, LOOKUP_HEX) && hexes(secret, SECRET_HEX)).then_some(lookup)
}

/// Keys one user may hold (neither revoked nor expired).
pub const MAX_LIVE_KEYS: i64 = 50;
/// The longest expiry a key may be given, in days.
pub const MAX_EXPIRY_DAYS: u32 = 3650;

/// A key asked for, by its user on `/v1/keys` or by an operator with
/// `rag-engine keys create`: both make it with [`create`], so both are held
/// to the same name rule, expiry range and number of live keys.
pub struct KeyRequest<'a> {
    pub user_id: &'a str,
    /// Trimmed here; 1-100 characters, no control characters.
    pub name: &'a str,
    /// The one workspace it reaches, already known to be the user's.
    pub workspace_id: Option<&'a str>,
    pub expires_in_days: Option<u32>,
    pub sources_in_content: bool,
}

/// A key just made: its row and its secret, shown this once.
pub struct CreatedKey {
    pub row: rag_store::api_keys::ApiKeyRow,
    pub secret: String,
}

/// Checks a request and makes the key: 400 for a bad name or expiry, 409
/// when the user already holds [`MAX_LIVE_KEYS`].
pub async fn create(pool: &PgPool, request: KeyRequest<'_>) -> Result<CreatedKey, ApiError> {
    let name = crate::routes::checked_text("name", request.name.trim(), 1, 100)?;
    let expires_at = match request.expires_in_days {
        None => None,
        Some(d @ 1..=MAX_EXPIRY_DAYS) => Some(chrono::Utc::now() + chrono::Duration::days(i64::from(d))),
        Some(d) => return Err(ApiError::bad_request("invalid_field", format!("expires_in_days must be 1-{MAX_EXPIRY_DAYS} (is {d})"))),
    };
    if rag_store::api_keys::count_live(pool, request.user_id).await? >= MAX_LIVE_KEYS {
        return Err(ApiError::conflict(
            "too_many_keys",
            format!("{} holds {MAX_LIVE_KEYS} live API keys, the most allowed; revoke one first", request.user_id),
        ));
    }
    let minted = mint()?;
    let row = rag_store::api_keys::create(
        pool,
        &rag_store::api_keys::NewApiKey {
            id: uuid::Uuid::now_v7(),
            user_id: request.user_id,
            name,
            workspace_id: request.workspace_id,
            lookup: &minted.lookup,
            secret_sha256: &minted.sha256,
            expires_at,
            sources_in_content: request.sources_in_content,
        },
    )
    .await?;
    tracing::info!(key_id = %row.id, user = %row.user_id, workspace_id = ?row.workspace_id, "API key created");
    Ok(CreatedKey { row, secret: minted.token })
}

/// The caller a key stands for: refused when unknown, of the wrong
/// secret, revoked or expired. Records the use.
pub async fn authenticate(state: &AppState, token: &str) -> Result<AuthUser, ApiError> {
    let invalid = || ApiError::unauthorized("invalid API key");
    let lookup = lookup_of(token).ok_or_else(invalid)?;
    let (key, stored) = rag_store::api_keys::find_by_lookup(state.pool(), lookup).await?.ok_or_else(invalid)?;
    // Constant time: how long the comparison takes says nothing about how
    // much of a guessed secret was right.
    if !bool::from(hash(token).ct_eq(&stored)) {
        return Err(invalid());
    }
    if key.revoked_at.is_some() {
        return Err(ApiError::unauthorized("this API key was revoked"));
    }
    let now = chrono::Utc::now();
    if key.expires_at.is_some_and(|at| at <= now) {
        return Err(ApiError::unauthorized("this API key has expired"));
    }
    if let Err(e) = rag_store::api_keys::touch(state.pool(), key.id).await {
        // Recording the use is bookkeeping: the request goes on.
        tracing::warn!(key_id = %key.id, error = %e, "recording an API key's use failed");
    }
    let far = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) + 10 * 365 * 24 * 3600;
    let expires_at = key.expires_at.map_or(far, |at| u64::try_from(at.timestamp()).unwrap_or(0));
    Ok(AuthUser { user_id: key.user_id, expires_at, workspace: key.workspace_id, key_id: Some(key.id) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_keys_are_well_formed_distinct_and_hashed() {
        let a = mint().unwrap();
        let b = mint().unwrap();
        assert_ne!(a.token, b.token);
        assert!(looks_like_key(&a.token));
        assert_eq!(lookup_of(&a.token), Some(a.lookup.as_str()));
        assert_eq!(a.token.len(), PREFIX.len() + LOOKUP_HEX + 1 + SECRET_HEX);
        assert_eq!(a.sha256, hash(&a.token));
        assert_eq!(a.sha256.len(), 32);
        for bad in ["rag_", "rag_abc_def", &a.token[..a.token.len() - 1], &a.token.to_uppercase(), "eyJhbGciOi.x.y"] {
            assert_eq!(lookup_of(bad), None, "{bad}");
        }
    }
}
