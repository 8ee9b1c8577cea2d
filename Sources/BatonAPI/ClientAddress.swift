import BatonHTTP

/// Decides the client IP for audit and throttling. The socket peer, unless the peer is a
/// trusted proxy: then the rightmost X-Forwarded-For address that is not itself a trusted
/// proxy (X-Real-IP when there is no X-Forwarded-For). Addresses a client put further left
/// cannot be trusted, since any client can send the header.
struct ClientAddress: Sendable {
    /// The trusted proxies; default: loopback (127.0.0.1/32, ::1/128).
    var trustedProxies: [CIDR] = [CIDR("127.0.0.1/32")!, CIDR("::1/128")!]

    func isTrusted(_ address: IPAddress) -> Bool { trustedProxies.contains { $0.contains(address) } }

    /// The client's address for a request from `peer`.
    func resolve(peer: IPAddress, forwardedFor: [String], realIP: String?) -> IPAddress {
        guard isTrusted(peer) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingSpaces }
        if !hops.isEmpty {
            var leftmost = peer
            for hop in hops.reversed() {
                guard let address = IPAddress(hop) else { return leftmost }  // garbage: stop at the last good hop
                if !isTrusted(address) { return address }
                leftmost = address
            }
            return leftmost
        }
        if let realIP, let address = IPAddress(realIP.trimmingCharacters()) { return address }
        return peer
    }
}

extension String {
    fileprivate func trimmingCharacters() -> Substring { self[...].trimmingSpaces }
}
