import BatonCore
import BatonDPoP

/// An identity provider whose tokens `POST /v1/token-exchange` accepts, as `baton admin issuer
/// add` records it in the database (shared by every instance, like the key ring).
package struct IdentityIssuer: Equatable, Sendable {
    /// How an identity (`iss`, `sub`) that no account is linked to yet is treated.
    package enum NewUsers: String, CaseIterable, Sendable {
        /// A new account is made on its first login and linked to it.
        case create
        /// Refused until an operator links it (`baton admin identity link`).
        case linkedOnly = "linked-only"
    }

    /// The operator's short name (`keycloak`, `apple`): letters, digits and `-`, 1-32 bytes;
    /// the prefix of the usernames of the accounts this issuer creates.
    package var name: String
    /// The exact `iss` of its tokens: an `https` URL (OIDC Core §2), compared byte for byte.
    package var issuer: String
    /// The kind of token it issues.
    package var tokenType: SubjectTokenType
    /// The audiences accepted: the app's client ids for ID tokens; Baton's own identifiers
    /// for assertions (RFC 7523 §3 item 3).
    package var audiences: [String]
    /// The algorithms its tokens may be signed with.
    package var algorithms: [IdentityAlgorithm]
    /// A JWK Set given by the operator (air-gapped providers); nil: fetched by discovery.
    package var staticKeys: String?
    /// PEM certificates to trust for its discovery and JWKS fetches instead of the system's.
    package var caPEM: String?
    package var newUsers: NewUsers
    /// How old a token's `iat` may be (and so how long a token is worth keeping as used).
    package var maxAge: Duration
    /// The clock skew allowed on `exp`, `iat`, `nbf` and `auth_time`.
    package var skew: Duration

    package static let defaultMaxAge: Duration = .seconds(600)
    package static let defaultSkew: Duration = .seconds(60)

    package init(name: String, issuer: String, tokenType: SubjectTokenType, audiences: [String],
                 algorithms: [IdentityAlgorithm] = IdentityAlgorithm.defaults, staticKeys: String? = nil, caPEM: String? = nil,
                 newUsers: NewUsers = .create, maxAge: Duration = defaultMaxAge, skew: Duration = defaultSkew) {
        self.name = name
        self.issuer = issuer
        self.tokenType = tokenType
        self.audiences = audiences
        self.algorithms = algorithms
        self.staticKeys = staticKeys
        self.caPEM = caPEM
        self.newUsers = newUsers
        self.maxAge = maxAge
        self.skew = skew
    }

    /// Checks what an operator gave: the rules above, a parsable static key set, an `https`
    /// issuer without query or fragment, bounded durations.
    /// - Throws: `.invalidArgument` naming the setting.
    package func validate() throws(BatonError) {
        try Self.validateName(name)
        try Self.validateIssuerURL(issuer)
        guard !audiences.isEmpty else { throw .invalidArgument("--client-id (the accepted audience) is required") }
        for audience in audiences where audience.isEmpty || audience.utf8.count > 256 || audience.unicodeScalars.contains(where: \.isControlOrFormat) {
            throw .invalidArgument("--client-id must be 1-256 printable characters")
        }
        guard !algorithms.isEmpty else { throw .invalidArgument("--algorithm: at least one algorithm is required") }
        if let staticKeys {
            do { _ = try KeySet(json: Array(staticKeys.utf8)) } catch { throw .invalidArgument("--jwks-file: \(error.description)") }
        }
        if let caPEM, !caPEM.contains("-----BEGIN CERTIFICATE-----") {
            throw .invalidArgument("--ca-file holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        guard maxAge >= .seconds(10), maxAge <= .seconds(86_400) else { throw .invalidArgument("--max-age must be 10 s to 24 h") }
        guard skew >= .zero, skew <= .seconds(600) else { throw .invalidArgument("--skew must be 0 to 10 minutes") }
    }

    /// An issuer's short name: 1-32 lowercase letters, digits and `-`.
    package static func validateName(_ name: String) throws(BatonError) {
        guard (1...32).contains(name.utf8.count),
              name.utf8.allSatisfy({ (48...57).contains($0) || (97...122).contains($0) || $0 == UInt8(ascii: "-") }) else {
            throw .invalidArgument("the issuer's name must be 1-32 characters of lowercase letters, digits and -")
        }
    }

    /// An issuer identifier: `https`, a host, no query, no fragment (OIDC Core §2 "iss",
    /// OIDC Discovery §3); a trailing path is allowed.
    package static func validateIssuerURL(_ text: String) throws(BatonError) {
        guard text.hasPrefix("https://"), text.utf8.count > 8, text.utf8.count <= 512 else {
            throw .invalidArgument("--issuer must be an https URL (OIDC Core §2), e.g. https://login.bank.example")
        }
        guard !text.contains("?"), !text.contains("#"), !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value >= 0x7F }) else {
            throw .invalidArgument("--issuer must be an https URL without query, fragment, spaces or non-ASCII characters")
        }
    }

    /// Where discovery finds the provider's metadata (OIDC Discovery §4: the issuer, its
    /// trailing `/` removed, then `/.well-known/openid-configuration`).
    package var discoveryURL: String {
        (issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer) + "/.well-known/openid-configuration"
    }

    // MARK: - Stored form

    /// The settings as the database keeps them (one JSON object; name and issuer have columns).
    package var settingsJSON: String {
        var members: [String: JSONValue] = [
            "token_type": .string(tokenType.shortName),
            "audiences": .array(audiences.map { .string($0) }),
            "algorithms": .array(algorithms.map { .string($0.rawValue) }),
            "new_users": .string(newUsers.rawValue),
            "max_age_seconds": .int(maxAge.components.seconds),
            "skew_seconds": .int(skew.components.seconds),
        ]
        if let staticKeys { members["jwks"] = .string(staticKeys) }
        if let caPEM { members["ca_pem"] = .string(caPEM) }
        return JSONValue.object(members).text
    }

    /// The issuer stored as `name`, `issuer` and `settingsJSON`; nil when the settings cannot
    /// be read (written by a newer build).
    package init?(name: String, issuer: String, settingsJSON: String) {
        guard let node = try? StrictJSONParser.parse(Array(settingsJSON.utf8)), let members = node.object,
              let type = members["token_type"]?.string.flatMap(SubjectTokenType.init(shortName:)),
              case .array(let audienceNodes)? = members["audiences"], case .array(let algorithmNodes)? = members["algorithms"],
              let newUsers = members["new_users"]?.string.flatMap(NewUsers.init(rawValue:)),
              let maxAge = members["max_age_seconds"]?.number, let skew = members["skew_seconds"]?.number
        else { return nil }
        let audiences = audienceNodes.compactMap(\.string)
        let algorithms = algorithmNodes.compactMap { $0.string.flatMap(IdentityAlgorithm.init(rawValue:)) }
        self.init(name: name, issuer: issuer, tokenType: type, audiences: audiences, algorithms: algorithms,
                  staticKeys: members["jwks"]?.string, caPEM: members["ca_pem"]?.string, newUsers: newUsers,
                  maxAge: .seconds(Int64(maxAge)), skew: .seconds(Int64(skew)))
    }
}
