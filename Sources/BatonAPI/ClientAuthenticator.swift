import BatonCore
import Foundation
import Synchronization

/// A resource server allowed to call `/v1/introspect` and `/v1/revoke`
/// (`--introspection-client ID:SECRET-FILE`). Only digests are kept: the secret itself is
/// never held past startup, logged or compared as text.
package struct IntrospectionClient: Sendable, Equatable {
    /// The client id, as the resource server sends it.
    package let id: String
    let idDigest: [UInt8]
    let secretDigest: [UInt8]

    package init(id: String, secret: [UInt8]) {
        self.id = id
        self.idDigest = Digest.sha256(Array(id.utf8))
        self.secretDigest = Digest.sha256(secret)
    }
}

/// RFC 6749 §2.3.1 client authentication with HTTP Basic (`client_secret_basic`): the id and
/// secret are form-urlencoded, joined by `:` and base64-encoded. Every configured client is
/// compared, id and secret both, through SHA-256 digests and `CRYPTO_memcmp`, so the time an
/// answer takes does not tell a known id from an unknown one, nor how much of a secret matched.
///
/// A right id and secret are always accepted: a secret is 32 to 512 random characters (256
/// bits from `openssl rand -base64 32`), which no one guesses at any request rate, and a client
/// id is not a secret, so failures counted per id would let anyone lock a resource server out
/// everywhere (issue 43, finding 3: 100 wrong secrets from 20 addresses used to block the right
/// one for an hour). Wrong ones are counted per address alone (`LoginThrottle`'s address
/// counter: 20 failures, then 429 too_many_attempts from a minute doubling to an hour, for
/// that address's wrong attempts only), which quiets a misconfigured or hostile address and
/// keeps its failures out of the logs' way. The throttle's keys are address groups, never the
/// presented id, so its memory is its capacity times a short key whatever ids arrive.
final class ClientAuthenticator: Sendable {
    let clients: [IntrospectionClient]
    private let throttle = Mutex(ClientAuthenticator.addressThrottle())

    init(clients: [IntrospectionClient]) {
        self.clients = clients
    }

    /// `LoginThrottle` with its per-id and per-pair counters off: the address counter alone.
    private static func addressThrottle() -> LoginThrottle {
        var throttle = LoginThrottle()
        throttle.pairLimit = .max
        throttle.usernameLimit = .max
        return throttle
    }

    /// What a client authentication came to.
    enum Outcome: Equatable {
        case authenticated(String)
        case refused
        /// Too many failures from this address: retry after the seconds given.
        case throttled(Int64)
    }

    /// `authenticate(_:)`, then, for a failure, the caller's address (`ip`, as the server
    /// determined it) counted, or refused with 429 while it is blocked (without extending the
    /// block). A right secret is accepted from any address at any time.
    func authenticate(_ authorization: String?, ip: String?, now: Instant) -> Outcome {
        if let id = authenticate(authorization) { return .authenticated(id) }
        if let wait = throttle.withLock({ $0.retryAfter(username: "", ip: ip, now: now) }) {
            return .throttled(max(1, wait.components.seconds + (wait.components.attoseconds > 0 ? 1 : 0)))
        }
        throttle.withLock { $0.recordFailure(username: "", ip: ip, now: now) }
        return .refused
    }

    /// The bytes of the throttle's keys (tests: bounded whatever ids are presented).
    var throttleKeyBytes: Int { throttle.withLock { $0.keyBytes } }

    /// The `WWW-Authenticate` of a refused client (RFC 6749 §5.2: the scheme the client should use).
    static let challenge = #"Basic realm="baton""#

    /// The id of the client `authorization` authenticates, or nil.
    func authenticate(_ authorization: String?) -> String? {
        guard let (id, secret) = Self.basicCredentials(authorization) else { return nil }
        let idDigest = Digest.sha256(Array(id.utf8))
        let secretDigest = Digest.sha256(Array(secret.utf8))
        var matched: String?
        for client in clients {
            // Both comparisons always run: no early exit on the id.
            let idMatches = Digest.constantTimeEquals(client.idDigest, idDigest)
            let secretMatches = Digest.constantTimeEquals(client.secretDigest, secretDigest)
            if idMatches, secretMatches, matched == nil { matched = client.id }
        }
        return matched
    }

    /// `Basic base64(urlencode(id) ":" urlencode(secret))` (RFC 7617, RFC 6749 §2.3.1), or nil
    /// for any other scheme or a malformed value.
    static func basicCredentials(_ header: String?) -> (id: String, secret: String)? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "basic",
              let data = Data(base64Encoded: String(parts[1].trimmingSpaces)) else { return nil }
        let bytes = Array(data)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
              let id = try? FormBody.decode(bytes[..<colon]), let secret = try? FormBody.decode(bytes[(colon + 1)...]),
              !id.isEmpty, !secret.isEmpty else { return nil }
        return (id, secret)
    }
}
