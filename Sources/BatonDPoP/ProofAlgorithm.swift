/// The signature algorithms a DPoP proof may use: asymmetric only (RFC 9449 §4.3 check 5),
/// so never `none` and never an HMAC (`HS256`), whose "public key" would be the secret.
package enum ProofAlgorithm: String, CaseIterable, Sendable {
    /// ECDSA on P-256 with SHA-256 (RFC 7518 §3.4): the Secure Enclave's, required.
    case es256 = "ES256"
    /// Ed25519 under its original, polymorphic name (RFC 8037 §3.1); only `crv` Ed25519 is accepted.
    case edDSA = "EdDSA"
    /// Ed25519 under its fully specified name (RFC 9864).
    case ed25519 = "Ed25519"
}
