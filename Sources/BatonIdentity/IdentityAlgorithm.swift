/// The signature algorithms an identity provider's tokens may use: asymmetric only, so never
/// `none` and never an HMAC, whose "key" an attacker could take from the provider's public
/// JWKS (the algorithm-confusion attack). Each issuer allows a subset (`--algorithm`).
package enum IdentityAlgorithm: String, CaseIterable, Sendable {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 §3.3): OIDC's default (OIDC Core §15.1).
    case rs256 = "RS256"
    /// RSASSA-PSS with SHA-256, MGF1 with SHA-256, a 32-byte salt (RFC 7518 §3.5).
    case ps256 = "PS256"
    /// ECDSA on P-256 with SHA-256 (RFC 7518 §3.4).
    case es256 = "ES256"
    /// Ed25519 (RFC 8037 §3.1).
    case edDSA = "EdDSA"

    /// The algorithms an issuer allows when the operator names none: the two every mainstream
    /// provider signs with (Apple, Google, Keycloak, Entra: RS256; many banks' backends: ES256).
    package static let defaults: [IdentityAlgorithm] = [.rs256, .es256]
}
