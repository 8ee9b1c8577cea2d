import BatonCore

/// A JWK SHA-256 thumbprint (RFC 7638): what a bound chain stores of its key (`jkt`,
/// RFC 9449 §6.1). Two JWKs of one key have one thumbprint, whatever their other members.
package struct Thumbprint: Hashable, Sendable, CustomStringConvertible {
    /// The 32 bytes of the SHA-256.
    package let bytes: [UInt8]

    package init(bytes: [UInt8]) { self.bytes = bytes }

    /// The base64url form, as `jkt` and `cnf.jkt` carry it.
    package var text: String { Base64URL.encode(bytes) }

    package var description: String { text }

    /// The members RFC 7638 §3.2 hashes for each key type (RFC 8037 §2 for OKP), in order.
    private static let requiredMembers: [String: [String]] = [
        "EC": ["crv", "kty", "x", "y"],
        "RSA": ["e", "kty", "n"],
        "oct": ["k", "kty"],
        "OKP": ["crv", "kty", "x"],
    ]

    /// The thumbprint of a JWK of any key type RFC 7638 and RFC 8037 define.
    /// - Throws: `.invalidKey` when `kty` is unknown or a required member is not a string.
    package init(jwk: [String: JSONNode]) throws(ProofError) {
        guard let type = jwk["kty"]?.string, let names = Self.requiredMembers[type] else {
            throw .invalidKey(reason: "kty is missing or unknown")
        }
        var members: [(String, String)] = []
        for name in names {
            guard let value = jwk[name]?.string else { throw .invalidKey(reason: "\(name) is missing or not a string") }
            members.append((name, value))
        }
        self.init(orderedMembers: members)
    }

    /// The thumbprint of the P-256 key (`x`, `y`): `orderedMembers`'s JSON, written without
    /// its escaping checks (base64url needs none in JSON). Every bound verify computes it.
    package init(p256X x: [UInt8], y: [UInt8]) {
        var json: [UInt8] = []
        json.reserveCapacity(128)
        json += #"{"crv":"P-256","kty":"EC","x":""#.utf8
        Base64URL.append(x, to: &json)
        json += #"","y":""#.utf8
        Base64URL.append(y, to: &json)
        json += #""}"#.utf8
        bytes = Digest.sha256(json)
    }

    /// The thumbprint of the Ed25519 key `x`, written as `init(p256X:y:)` writes a P-256 one.
    package init(ed25519X x: [UInt8]) {
        var json: [UInt8] = []
        json.reserveCapacity(96)
        json += #"{"crv":"Ed25519","kty":"OKP","x":""#.utf8
        Base64URL.append(x, to: &json)
        json += #""}"#.utf8
        bytes = Digest.sha256(json)
    }

    /// The thumbprint of the JSON object of `members`, given in lexicographic order of their
    /// names (RFC 7638 §3.3: no whitespace, names sorted by their UTF-16 code units; the
    /// names here are ASCII, where that is byte order).
    package init(orderedMembers members: [(String, String)]) {
        var json: [UInt8] = [UInt8(ascii: "{")]
        for (index, (name, value)) in members.enumerated() {
            if index > 0 { json.append(UInt8(ascii: ",")) }
            JSONValue.writeString(name, to: &json)
            json.append(UInt8(ascii: ":"))
            JSONValue.writeString(value, to: &json)
        }
        json.append(UInt8(ascii: "}"))
        bytes = Digest.sha256(json)
    }
}
