import BatonCore
import Foundation

/// Standard Webhooks signing (standard-webhooks `spec/standard-webhooks.md`, "Signature
/// scheme"): `v1,` and the base64 of HMAC-SHA256 over `{webhook-id}.{webhook-timestamp}.{body}`
/// with the secret's bytes (what follows `whsec_`, base64-decoded).
enum WebhookSignature {
    /// The `webhook-signature` header value for one attempt.
    static func header(messageID: String, timestamp: Int64, body: String, secret: [UInt8]) -> String {
        let signed = Array("\(messageID).\(timestamp).\(body)".utf8)
        let mac = signed.withUnsafeBytes { HMACKey(secret).authenticationCode($0) }
        return "v1," + Data(mac).base64EncodedString()
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
        case .malformed(let path): "webhook secret file \(path) must hold whsec_ followed by base64 (at least 24 bytes of secret)"
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

    /// The secret in the file at `path`, which group and others must not be able to read
    /// (like the token key file).
    package static func load(from path: String) throws(WebhookSecretError) -> [UInt8] {
        let attributes: [FileAttributeKey: Any]
        let text: String
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw .unreadable(path: path, reason: (error as NSError).localizedDescription)
        }
        if let mode = attributes[.posixPermissions] as? Int, mode & 0o077 != 0 { throw .readableByOthers(path: path) }
        guard let secret = parse(text) else { throw .malformed(path: path) }
        return secret
    }

    /// A new random secret's text (32 bytes), for `baton admin webhooks new-secret`.
    package static func generate() -> String { "whsec_" + Data(SecureRandom.bytes(32)).base64EncodedString() }
}
