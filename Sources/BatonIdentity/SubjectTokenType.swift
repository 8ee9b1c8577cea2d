/// The kinds of subject token `POST /v1/token-exchange` takes (RFC 8693 §3), each an issuer's
/// configured kind: an issuer's tokens are of one kind only.
package enum SubjectTokenType: String, CaseIterable, Sendable {
    /// An OpenID Connect ID token (OIDC Core §2), device-bound by its `nonce`.
    case idToken = "urn:ietf:params:oauth:token-type:id_token"
    /// A signed assertion from the bank's backend (RFC 7523 §3), device-bound by `cnf.jkt`
    /// (RFC 7800 §3.1), usable once by its `jti`.
    case jwt = "urn:ietf:params:oauth:token-type:jwt"

    /// The short name `baton admin issuer add --token-type` takes and `issuer list` shows.
    package var shortName: String {
        switch self {
        case .idToken: "id_token"
        case .jwt: "jwt"
        }
    }

    /// The kind named `name` (`id_token` or `jwt`), or nil.
    package init?(shortName name: String) {
        guard let found = Self.allCases.first(where: { $0.shortName == name }) else { return nil }
        self = found
    }
}
