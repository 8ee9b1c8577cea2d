import BatonCore
import Foundation

/// Standard Webhooks signing (standard-webhooks `spec/standard-webhooks.md`, "Signature
/// scheme"): `v1,` and the base64 of HMAC-SHA256 over `{webhook-id}.{webhook-timestamp}.{body}`
/// with the secret's bytes (what follows `whsec_`, base64-decoded). With several secrets (a
/// rotation's overlap) the header lists one signature per secret, space-separated, as the
/// spec allows ("the header may contain multiple signatures... delimited by a space"); a
/// receiver accepts the message when any of them verifies with its secret.
enum WebhookSignature {
    /// The `webhook-signature` header value for one attempt, signed with each of `secrets` in order.
    static func header(messageID: String, timestamp: Int64, body: String, secrets: [[UInt8]]) -> String {
        let signed = Array("\(messageID).\(timestamp).\(body)".utf8)
        return secrets.map { secret in
            "v1," + Data(signed.withUnsafeBytes { HMACKey(secret).authenticationCode($0) }).base64EncodedString()
        }.joined(separator: " ")
    }
}

/// Why a webhook secret could not be read.
package enum WebhookSecretError: Error, Equatable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case readableByOthers(path: String)
    case malformed(path: String)

    package var description: String {
        switch self {
        case .unreadable(let path, let reason): "cannot read webhook secret file \(path): \(reason)"
        case .readableByOthers(let path): "webhook secret file \(path) can be read by group or others; chmod 600 it"
        case .malformed(let path): "webhook secret file \(path) must hold whsec_ followed by base64 (at least 24 bytes of secret), or two such secrets on separate lines during a rotation"
        }
    }
}

/// A `whsec_…` secret as the Standard Webhooks libraries take it.
package enum WebhookSecret {
    /// The secret's bytes from its text (`whsec_` and standard base64; surrounding white space
    /// ignored); nil unless it decodes to at least 24 bytes (the spec asks for 24 to 64).
    package static func parse(_ text: String) -> [UInt8]? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix("whsec_"), let data = Data(base64Encoded: String(trimmed.dropFirst(6))), data.count >= 24 else { return nil }
        return Array(data)
    }

    /// The secrets of a file's text: one `whsec_` secret, or several separated by white space
    /// (a rotation: the new one and the old one, each event signed with both); nil unless
    /// there is at least one and each parses, at most 4.
    package static func parseAll(_ text: String) -> [[UInt8]]? {
        let secrets = text.split(whereSeparator: \.isWhitespace).map { parse(String($0)) }
        guard (1...4).contains(secrets.count), !secrets.contains(where: { $0 == nil }) else { return nil }
        return secrets.compactMap { $0 }
    }

    /// Every secret in the file at `path` (`parseAll`), which group and others must not be
    /// able to read (like the token key file).
    package static func loadAll(from path: String) throws(WebhookSecretError) -> [[UInt8]] {
        let text = try readOwnerOnly(path)
        guard let secrets = parseAll(text) else { throw .malformed(path: path) }
        return secrets
    }

    /// The file's text, refused when group or others can read it.
    private static func readOwnerOnly(_ path: String) throws(WebhookSecretError) -> String {
        let attributes: [FileAttributeKey: Any]
        let text: String
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw .unreadable(path: path, reason: (error as NSError).localizedDescription)
        }
        if let mode = attributes[.posixPermissions] as? Int, mode & 0o077 != 0 { throw .readableByOthers(path: path) }
        return text
    }

    /// A new random secret's text (32 bytes), for `baton admin webhooks new-secret`.
    package static func generate() -> String { "whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString() }
}
