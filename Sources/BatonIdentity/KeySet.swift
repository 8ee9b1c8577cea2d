import BatonDPoP

/// An identity provider's usable signing keys, parsed from a JWK Set (RFC 7517 §5).
package struct KeySet: Equatable, Sendable {
    /// The keys Baton can verify with, in the set's order.
    package let keys: [IdentityKey]

    /// The most keys kept from one set: a provider publishes a handful (current, next,
    /// previous); a set of thousands is a misconfiguration or an attack on verification time.
    package static let maximumKeys = 64

    package init(keys: [IdentityKey]) { self.keys = keys }

    /// Parses `json`, keeping the keys Baton uses and skipping the others.
    /// - Throws: `.malformed` naming what is wrong: not JSON, no `keys` array, a member that is
    ///   not an object, more than `maximumKeys` usable keys, none usable.
    package init(json: [UInt8]) throws(KeySetError) {
        let node: JSONNode
        do { node = try StrictJSONParser.parse(json) } catch { throw .malformed("the JWK Set is not valid JSON") }
        guard let members = node.object, case .array(let entries)? = members["keys"] else {
            throw .malformed("the JWK Set has no \"keys\" array")
        }
        var keys: [IdentityKey] = []
        for entry in entries {
            guard let jwk = entry.object else { throw .malformed("a member of \"keys\" is not a JSON object") }
            if let key = IdentityKey(jwk: jwk) { keys.append(key) }
        }
        guard !keys.isEmpty else { throw .malformed("the JWK Set has no RSA (2048-8192 bits), P-256 or Ed25519 signing key") }
        guard keys.count <= Self.maximumKeys else { throw .malformed("the JWK Set has more than \(Self.maximumKeys) signing keys") }
        self.keys = keys
    }

    /// The keys that may verify a token signed with `algorithm` under `kid`: the key of that
    /// `kid`, or, for a token without one, every key when the set has exactly one that fits
    /// (OIDC Core §10.1: "the kid value MAY be omitted" only when there is one key).
    package func candidates(kid: String?, algorithm: IdentityAlgorithm) -> [IdentityKey] {
        let fitting = keys.filter { $0.fits(algorithm) }
        guard let kid else { return fitting.count == 1 ? fitting : [] }
        return fitting.filter { $0.id == kid }
    }

    /// Whether the set has a key of id `kid` (for any algorithm).
    package func contains(kid: String) -> Bool { keys.contains { $0.id == kid } }
}

/// Why a JWK Set, or the discovery document naming it, could not be used.
package enum KeySetError: Error, Equatable, CustomStringConvertible {
    /// The document is not what it must be (the message names the problem).
    case malformed(String)
    /// Fetching it failed (no answer, a TLS error, a status other than 200, too large, too slow).
    case fetchFailed(String)

    package var description: String {
        switch self {
        case .malformed(let text), .fetchFailed(let text): text
        }
    }
}
