import Foundation

/// One token of a login's chain and what the client knows about it: the bearer token, when it
/// stops granting access, until when it may be exchanged, and its place in the chain.
///
/// `expiresAt` is the client's own reckoning: the moment the bundle was received plus the
/// server's `expires_in`. A phone's clock may be minutes off the server's, and a relative
/// lifetime is immune to that; the server's absolute `expires_at` is kept for display only.
public struct TokenBundle: Codable, Sendable, Equatable {
    /// The bearer token (`bt1_…`). Secret: never log it.
    public var token: String
    /// When the client considers the token expired (receipt time + `expires_in`).
    public var expiresAt: Date
    /// The server's `expires_at`, as sent.
    public var serverExpiresAt: String
    /// The server's `exchange_until`: the last moment the token can be exchanged.
    public var exchangeUntil: String
    /// The chain (login) this token belongs to.
    public var chainID: String
    /// The token's place in its chain; 0 for the login's token.
    public var generation: Int
    /// The server's `expires_in`: how long the token was issued for; 0 when unknown.
    public var lifetime: TimeInterval
    /// How the token is presented: `.dpop` when the chain is bound to the device key (the login
    /// carried a proof), `.bearer` otherwise. Bundles stored before binding existed are Bearer.
    public var tokenType: TokenType {
        get { storedTokenType ?? .bearer }
        set { storedTokenType = newValue }
    }
    /// The thumbprint (`jkt`) of the device key the chain was bound with, to notice a key that
    /// was replaced since; nil when unbound or unknown.
    public var keyThumbprint: String?
    private var storedTokenType: TokenType?

    private enum CodingKeys: String, CodingKey {
        case token, expiresAt, serverExpiresAt, exchangeUntil, chainID, generation, lifetime, keyThumbprint
        case storedTokenType = "tokenType"
    }

    /// How a token is presented (RFC 6750 `Bearer`, RFC 9449 `DPoP`).
    public enum TokenType: String, Codable, Sendable {
        case bearer = "Bearer"
        case dpop = "DPoP"
    }

    /// Whether this bundle is a later token of `other`'s chain (a higher generation). A stored
    /// bundle of the same chain and a lower generation is the store lagging behind the session
    /// (a save or a read that failed), never news to adopt.
    func isLater(inChainOf other: TokenBundle) -> Bool {
        chainID == other.chainID && generation > other.generation
    }

    /// A bundle built from its parts (tests and stores use this).
    public init(token: String, expiresAt: Date, serverExpiresAt: String = "", exchangeUntil: String = "", chainID: String = "",
                generation: Int = 0, lifetime: TimeInterval = 0, tokenType: TokenType = .bearer, keyThumbprint: String? = nil) {
        self.lifetime = lifetime
        self.storedTokenType = tokenType
        self.keyThumbprint = keyThumbprint
        self.token = token
        self.expiresAt = expiresAt
        self.serverExpiresAt = serverExpiresAt
        self.exchangeUntil = exchangeUntil
        self.chainID = chainID
        self.generation = generation
    }

    /// Whether the token is past its expiry, or within `margin` of it, at `now`. The margin is
    /// at most a quarter of the token's lifetime, so that a server configured with tokens shorter
    /// than the margin does not get an exchange before every request.
    public func isExpired(at now: Date, margin: TimeInterval) -> Bool {
        let effectiveMargin = lifetime > 0 ? min(margin, lifetime / 4) : margin
        return now >= expiresAt.addingTimeInterval(-effectiveMargin)
    }

    /// The bundle in a login or exchange answer (docs/api.md, "Token bundle"), received at `now`;
    /// `key` is the device key whose proof went with the request (its thumbprint is kept when
    /// the server bound the chain: `"token_type": "DPoP"`, compared case-insensitively).
    /// - Throws: `BatonClientError.invalidResponse` naming the missing or mistyped field.
    /// An answer without `token_type` keeps `defaultType` (an exchange keeps its chain's type).
    static func decode(_ data: Data, receivedAt now: Date, key: DeviceKey? = nil,
                       defaultType: TokenType = .bearer) throws(BatonClientError) -> TokenBundle {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw .invalidResponse("the token bundle is not a JSON object")
        }
        guard let token = object["token"] as? String, !token.isEmpty else { throw .invalidResponse("token bundle without \"token\"") }
        guard let expiresIn = object["expires_in"] as? Int else { throw .invalidResponse("token bundle without \"expires_in\"") }
        guard let chainID = object["chain_id"] as? String else { throw .invalidResponse("token bundle without \"chain_id\"") }
        guard let generation = object["generation"] as? Int else { throw .invalidResponse("token bundle without \"generation\"") }
        let bound = (object["token_type"] as? String).map { $0.lowercased() == "dpop" } ?? (defaultType == .dpop)
        return TokenBundle(token: token, expiresAt: now.addingTimeInterval(TimeInterval(expiresIn)),
                           serverExpiresAt: object["expires_at"] as? String ?? "",
                           exchangeUntil: object["exchange_until"] as? String ?? "",
                           chainID: chainID, generation: generation, lifetime: TimeInterval(expiresIn),
                           tokenType: bound ? .dpop : .bearer, keyThumbprint: bound ? key?.thumbprint : nil)
    }

    /// The `Authorization` header's value for this token.
    var authorization: String { (tokenType == .dpop ? "DPoP " : "Bearer ") + token }
}

extension TokenBundle: CustomStringConvertible {
    /// Everything but the token itself, so that a bundle can be printed or logged safely.
    public var description: String {
        "TokenBundle(chain: \(chainID), generation: \(generation), expiresAt: \(expiresAt), type: \(tokenType.rawValue))"
    }
}

/// What a credential store holds: the device id (generated once, kept across logins) and the
/// current token bundle, if logged in.
public struct StoredCredentials: Codable, Sendable, Equatable {
    /// Sent as `device_id` at login and `X-Device-Id` on every request (R3a needs it).
    public var deviceID: String
    /// The head of this device's chain; nil when logged out.
    public var bundle: TokenBundle?
    /// The exchange of `bundle` one of the sessions sharing the store has under way, if any.
    public var claim: ExchangeClaim?
    /// The stamp of the installation marker of the app that saved these (`InstallationMarker.Stamp`:
    /// its id and location); nil when saved by a release before the marker, or before one existed.
    public var installation: String?

    /// Credentials from their parts.
    public init(deviceID: String, bundle: TokenBundle?, claim: ExchangeClaim? = nil, installation: String? = nil) {
        self.deviceID = deviceID
        self.bundle = bundle
        self.claim = claim
        self.installation = installation
    }

    /// The serialized form used by the file and Keychain stores (a version field for later formats).
    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(Envelope(version: 1, credentials: self))
    }

    /// The format version `encoded()` writes.
    static let formatVersion = 1

    /// Decodes what `encoded()` wrote; nil for anything else (corrupt, truncated, an older
    /// unknown version), which logs the user out.
    static func decode(_ data: Data) -> StoredCredentials? {
        try? decodeStored(data)
    }

    /// `decode`, telling a newer format apart (issue 42, F14): credentials written by a later
    /// release (a rollback of the app, or another app of the team sharing the item) are not
    /// "logged out", which would show the login screen and overwrite them.
    /// - Throws: `.credentialsUnavailable` naming the newer format.
    static func decodeStored(_ data: Data) throws(BatonClientError) -> StoredCredentials? {
        if let envelope = try? JSONDecoder().decode(Envelope.self, from: data), envelope.version == formatVersion {
            return envelope.credentials
        }
        if let header = try? JSONDecoder().decode(VersionOnly.self, from: data), header.version > formatVersion {
            throw .credentialsUnavailable("the credentials were stored by a newer release of the app (format \(header.version); "
                + "this release reads format \(formatVersion)): update the app; they are left as they are")
        }
        return nil
    }

    private struct Envelope: Codable {
        var version: Int
        var credentials: StoredCredentials
    }

    private struct VersionOnly: Decodable {
        var version: Int
    }
}
