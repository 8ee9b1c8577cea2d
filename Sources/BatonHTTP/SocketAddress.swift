import Glibc

/// An IPv4 or IPv6 address as 4 or 16 bytes, for peers, trusted proxies and X-Forwarded-For.
package struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 bytes (IPv6).
    package var bytes: [UInt8]

    /// Parses dotted IPv4 or textual IPv6 (brackets allowed); nil otherwise.
    package init?(_ text: some StringProtocol) {
        var text = String(text)
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: v4) { Array($0) }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            let raw = withUnsafeBytes(of: v6) { Array($0) }
            // An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address.
            bytes = raw[0..<10].allSatisfy { $0 == 0 } && raw[10] == 0xFF && raw[11] == 0xFF ? Array(raw[12...]) : raw
        } else {
            return nil
        }
    }

    package init(bytes: [UInt8]) { self.bytes = bytes }

    package var description: String {
        if bytes.count == 4 {
            // Dotted decimal written directly (every request formats its client address;
            // inet_ntop goes through sprintf). The same text as inet_ntop's.
            return String(unsafeUninitializedCapacity: 15) { buffer in
                var length = 0
                for (index, byte) in bytes.enumerated() {
                    if index > 0 {
                        buffer[length] = 46  // .
                        length += 1
                    }
                    if byte >= 100 {
                        buffer[length] = 48 + byte / 100
                        length += 1
                    }
                    if byte >= 10 {
                        buffer[length] = 48 + byte / 10 % 10
                        length += 1
                    }
                    buffer[length] = 48 + byte % 10
                    length += 1
                }
                return length
            }
        }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        if bytes.count == 4 {
            var address = in_addr()
            withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
            inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count))
        } else {
            var address = in6_addr()
            withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
            inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count))
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A network in CIDR notation (`127.0.0.1/32`, `::1/128`, `10.0.0.0/8`).
package struct CIDR: Hashable, Sendable, CustomStringConvertible {
    package var network: IPAddress
    package var prefixLength: Int

    /// Parses `ADDRESS/BITS` or a bare address (a single host).
    package init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(parts[0]) else { return nil }
        let maxBits = address.bytes.count * 8
        let bits = parts.count == 2 ? Int(parts[1]) : maxBits
        guard let bits, (0...maxBits).contains(bits) else { return nil }
        network = address
        prefixLength = bits
    }

    /// Whether `address` lies in this network.
    package func contains(_ address: IPAddress) -> Bool {
        guard address.bytes.count == network.bytes.count else { return false }
        var remaining = prefixLength
        for (a, b) in zip(address.bytes, network.bytes) where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if a & mask != b & mask { return false }
            remaining -= 8
        }
        return true
    }

    package var description: String { "\(network)/\(prefixLength)" }
}

/// Where to listen: `HOST:PORT`, `[IPV6]:PORT`.
package struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    package var host: IPAddress
    package var port: UInt16

    package init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
        let hostText = text[..<colon]
        if hostText.contains(":"), !(hostText.hasPrefix("[") && hostText.hasSuffix("]")) { return nil }
        guard let host = IPAddress(hostText == "localhost" ? "127.0.0.1" : hostText) else { return nil }
        self.host = host
        self.port = port
    }

    package var description: String { host.bytes.count == 16 ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
