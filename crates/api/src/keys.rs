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
