import BatonCore

/// A JWS in the compact serialization (RFC 7515 §7.1): `BASE64URL(header) '.'
/// BASE64URL(payload) '.' BASE64URL(signature)`, with header and payload JSON objects.
/// Parsing checks the form only; nothing here is trusted until the signature verifies.
package struct CompactJWS: Sendable {
    /// The protected header's members.
    package let header: [String: JSONNode]
    /// The payload's members (a JWT's claims).
    package let payload: [String: JSONNode]
    /// What was signed: the ASCII of the first two parts and the dot between them (§5.2).
    package let signingInput: [UInt8]
    /// The decoded signature.
    package let signature: [UInt8]

    /// Parses `text`.
    /// - Throws: `.malformed(part:)` naming the part that is missing, not base64url, or not a
    ///   JSON object; `.duplicateMember` when the header or payload gives a name twice.
    package init(_ text: String) throws(ProofError) {
        let bytes = Array(text.utf8)
        let dot = UInt8(ascii: ".")
        guard let first = bytes.firstIndex(of: dot), let second = bytes[(first + 1)...].firstIndex(of: dot) else {
            throw .malformed(part: "compact form (fewer than three parts)")
        }
        guard !bytes[(second + 1)...].contains(dot) else { throw .malformed(part: "compact form (more than three parts)") }
        let headerPart = bytes[..<first], payloadPart = bytes[(first + 1)..<second], signaturePart = bytes[(second + 1)...]
        header = try Self.object(headerPart, part: "header")
        payload = try Self.object(payloadPart, part: "payload")
        // An empty signature is `alg: none`'s (RFC 7518 §3.6); the allowlist refuses it later.
        guard let signature = Base64URL.decode(signaturePart) else { throw .malformed(part: "signature") }
        self.signature = signature
        signingInput = Array(bytes[..<second])
    }

    private static func object(_ encoded: ArraySlice<UInt8>, part: String) throws(ProofError) -> [String: JSONNode] {
        guard !encoded.isEmpty, let json = Base64URL.decode(encoded) else { throw .malformed(part: part) }
        let node: JSONNode
        do { node = try StrictJSONParser.parse(json) } catch {
            if case .duplicateName(let name) = error { throw .duplicateMember(part: part, name: name) }
            throw .malformed(part: part)
        }
        guard let members = node.object else { throw .malformed(part: part) }
        return members
    }
}
