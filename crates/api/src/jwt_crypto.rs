//! HS256 for `jsonwebtoken` on ring.
//!
//! jsonwebtoken signs through a process-wide `CryptoProvider`; its own two
//! are aws-lc-rs (a C library whose build alone took ~90 s of CPU, a
//! fifteenth of a fresh `rag-engine` build on 2 cores) and seven RustCrypto
//! crates. ring is already linked (rustls: the S3 client, reqwest), and
//! the API only ever signs and verifies HS256, so this provider does HS256
//! with ring's HMAC and refuses every other algorithm.

use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{ErrorKind, Result};
use jsonwebtoken::signature::{self, Signer, Verifier};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, EncodingKey};
use ring::hmac;

static PROVIDER: CryptoProvider =
    CryptoProvider { signer_factory: signer, verifier_factory: verifier, key_utils: KeyUtils::new_unimplemented() };

/// Makes this provider the process's (once; later calls do nothing). Every
/// path that signs or verifies calls it first: jsonwebtoken panics when no
/// provider is installed.
pub fn install() {
    // Err: a provider is installed already (this one, by an earlier call).
    let _ = PROVIDER.install_default();
}

struct Hs256Signer(hmac::Key);

impl Signer<Vec<u8>> for Hs256Signer {
    fn try_sign(&self, msg: &[u8]) -> std::result::Result<Vec<u8>, signature::Error> {
        Ok(hmac::sign(&self.0, msg).as_ref().to_vec())
    }
}

impl JwtSigner for Hs256Signer {
    fn algorithm(&self) -> Algorithm {
        Algorithm::HS256
    }
}

struct Hs256Verifier(hmac::Key);

impl Verifier<Vec<u8>> for Hs256Verifier {
    fn verify(&self, msg: &[u8], signature: &Vec<u8>) -> std::result::Result<(), signature::Error> {
        // Constant-time comparison inside ring.
        hmac::verify(&self.0, msg, signature).map_err(|_| signature::Error::new())
    }
}

impl JwtVerifier for Hs256Verifier {
    fn algorithm(&self) -> Algorithm {
        Algorithm::HS256
    }
}

fn signer(algorithm: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
    if *algorithm != Algorithm::HS256 {
        return Err(ErrorKind::InvalidAlgorithm.into());
    }
    if key.family() != AlgorithmFamily::Hmac {
        return Err(ErrorKind::InvalidKeyFormat.into());
    }
    Ok(Box::new(Hs256Signer(hmac::Key::new(hmac::HMAC_SHA256, key.as_bytes()))))
}

fn verifier(algorithm: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    if *algorithm != Algorithm::HS256 {
        return Err(ErrorKind::InvalidAlgorithm.into());
    }
    if key.family() != AlgorithmFamily::Hmac {
        return Err(ErrorKind::InvalidKeyFormat.into());
    }
    Ok(Box::new(Hs256Verifier(hmac::Key::new(hmac::HMAC_SHA256, key.try_get_as_bytes()?))))
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 4231, test case 2: HMAC-SHA-256 of "what do ya want for nothing?"
    // under the key "Jefe".
    #[test]
    fn signs_rfc_4231_vector_and_verifies_only_its_own_signature() {
        install();
        let signer = signer(&Algorithm::HS256, &EncodingKey::from_secret(b"Jefe")).unwrap();
        let mac = signer.try_sign(b"what do ya want for nothing?").unwrap();
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");

        let verifier = verifier(&Algorithm::HS256, &DecodingKey::from_secret(b"Jefe")).unwrap();
        assert!(verifier.verify(b"what do ya want for nothing?", &mac).is_ok());
        assert!(verifier.verify(b"what do ya want for nothing!", &mac).is_err());
        let other = super::verifier(&Algorithm::HS256, &DecodingKey::from_secret(b"Jeff")).unwrap();
        assert!(other.verify(b"what do ya want for nothing?", &mac).is_err());
    }

    #[test]
    fn refuses_every_algorithm_but_hs256() {
        for algorithm in [Algorithm::HS384, Algorithm::HS512, Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA] {
            assert!(signer(&algorithm, &EncodingKey::from_secret(b"k")).is_err(), "{algorithm:?}");
            assert!(verifier(&algorithm, &DecodingKey::from_secret(b"k")).is_err(), "{algorithm:?}");
        }
    }
}
