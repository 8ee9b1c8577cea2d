import Foundation

/// A genuine theft: a copy of a device's stored bundle (token and device id, as malware or a
/// backup would take it) used from elsewhere, straight to the server. The thief exchanges the
/// copy, then uses and renews what it got for a while, as an attacker keeping a session would.
/// It notes whether the server revoked the chain under it, or refused the copy outright: a
/// bound chain's token without its device key (`invalid_dpop_proof`, nothing changes).
final class Thief: StolenCopy, @unchecked Sendable {
    let chainID: String
    private let token: String
    private let deviceID: String
    /// `DPoP` for a bound chain's token (presented as the device would, but with no proof).
    private let scheme: String
    private let serverPort: UInt16
    private let lock = NSLock()
    private var revoked = false
    private var refused = false
    private var ending = "still using the copy"
    private var isStopping = false

    /// A thief holding a copy of the bundle in the store at `path`, or nil when none is stored.
    init?(copying path: String, serverPort: UInt16) {
        guard let data = FileManager.default.contents(atPath: path),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let credentials = object["credentials"] as? [String: Any], let deviceID = credentials["deviceID"] as? String,
              let bundle = credentials["bundle"] as? [String: Any], let token = bundle["token"] as? String,
              let chainID = bundle["chainID"] as? String else { return nil }
        self.chainID = chainID
        self.token = token
        self.deviceID = deviceID
        scheme = bundle["tokenType"] as? String == "DPoP" ? "DPoP" : "Bearer"
        self.serverPort = serverPort
    }

    /// Whether the thief saw the chain revoked (its exchange refused as reuse, or its token
    /// refused as revoked).
    var sawRevocation: Bool {
        lock.lock()
        defer { lock.unlock() }
        return revoked
    }

    /// Whether the server refused the copy for want of the device key (a bound chain).
    var wasRefusedWithoutKey: Bool {
        lock.lock()
        defer { lock.unlock() }
        return refused
    }

    /// Whether the theft came to nothing: the chain revoked, or the copy refused.
    var wasStopped: Bool { sawRevocation || wasRefusedWithoutKey }

    /// How the thief's use ended, for a theft the server missed.
    var outcome: String {
        lock.lock()
        defer { lock.unlock() }
        return ending
    }

    /// Ends the thief's loop at its next pause.
    func stop() {
        lock.lock()
        isStopping = true
        lock.unlock()
    }

    private var shouldStop: Bool {
        lock.lock()
        defer { lock.unlock() }
        return isStopping
    }

    private func end(_ text: String) {
        lock.lock()
        ending = text
        lock.unlock()
    }

    /// Uses the copy after `delay`, for up to `span`, on a thread of its own.
    func start(after delay: TimeInterval, for span: TimeInterval) {
        Thread { [self] in
            Thread.sleep(forTimeInterval: delay)  // the thief's own timing, not a synchronisation
            var held = token
            var mustExchange = true
            let deadline = Date().addingTimeInterval(span)
            while Date() < deadline && !shouldStop {
                let method = mustExchange ? "POST" : "GET", path = mustExchange ? "/v1/exchange" : "/v1/verify"
                guard let answer = Sockets.roundTrip(port: serverPort, HTTPMessage.request(method, path, token: held, scheme: scheme, deviceID: deviceID, port: serverPort)) else {
                    return end("no answer from the server")
                }
                let status = HTTPMessage.status(answer), body = HTTPMessage.body(answer)
                if status == 200, mustExchange,
                   let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any], let next = object["token"] as? String {
                    held = next
                    mustExchange = false
                } else if status == 401, body.contains("token_expired") {
                    mustExchange = true
                } else if status == 401, body.contains("invalid_dpop_proof") {
                    lock.lock()
                    refused = true
                    lock.unlock()
                    return
                } else if status == 401, body.contains("chain_revoked") || body.contains("token_reused") {
                    lock.lock()
                    revoked = true
                    lock.unlock()
                    return
                } else if status != 200 {
                    return end("refused: \(status ?? 0) \(body.prefix(80))")  // the thief gives up
                }
                Thread.sleep(forTimeInterval: 0.25)  // the thief's pace of use
            }
            end("used the copy for \(Int(span)) s unnoticed")
        }.start()
    }
}
