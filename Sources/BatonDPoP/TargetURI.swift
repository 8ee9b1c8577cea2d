/// An `http` or `https` URI reduced to what `htu` is compared on: scheme, host, port and
/// path, without query and fragment (RFC 9449 §4.3 check 9), after the syntax-based and
/// scheme-based normalization §4.3 asks for (RFC 3986 §6.2.2, §6.2.3): scheme and host in
/// lower case, the default port and an empty port dropped, an empty path as `/`,
/// percent-encodings in upper case and decoded where they encode an unreserved character,
/// and dot segments removed. Refused: any other scheme, userinfo (a target URI has none,
/// RFC 9110 §4.2.4), bytes outside printable ASCII, a bad percent-encoding or port.
package struct TargetURI: Equatable, Sendable, CustomStringConvertible {
    /// `scheme://host[:port]/path`, normalized.
    package let text: String

    package var description: String { text }

    /// Normalizes `uri`, or nil when it is not an absolute `http`/`https` URI.
    package init?(_ uri: String) {
        var bytes = Array(uri.utf8)
        // Everything from the first "?" or "#" on is query or fragment (RFC 3986 §3).
        if let end = bytes.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
            bytes.removeSubrange(end...)
        }
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
              bytes[colon...].starts(with: Array("://".utf8)) else { return nil }
        let scheme = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
        let defaultPort: Int
        switch scheme {
        case "http": defaultPort = 80
        case "https": defaultPort = 443
        default: return nil
        }
        let authorityStart = colon + 3
        let pathStart = bytes[authorityStart...].firstIndex(of: UInt8(ascii: "/")) ?? bytes.endIndex
        guard let authority = Self.authority(bytes[authorityStart..<pathStart], defaultPort: defaultPort),
              let path = Self.normalizedPercentEncoding(bytes[pathStart...]) else { return nil }
        text = scheme + "://" + authority + Self.removingDotSegments(path.isEmpty ? "/" : path)
    }

    // authority = [ userinfo "@" ] host [ ":" port ]; host = IP-literal / IPv4address / reg-name
    private static func authority(_ bytes: ArraySlice<UInt8>, defaultPort: Int) -> String? {
        guard !bytes.contains(UInt8(ascii: "@")) else { return nil }
        var hostEnd = bytes.endIndex
        var port: ArraySlice<UInt8> = []
        if bytes.first == UInt8(ascii: "[") {
            // IP-literal = "[" ( IPv6address / IPvFuture ) "]": the port follows the "]".
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostEnd = close + 1
            if hostEnd < bytes.endIndex {
                guard bytes[hostEnd] == UInt8(ascii: ":") else { return nil }
                port = bytes[(hostEnd + 1)...]
            }
        } else if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
            hostEnd = colon
            port = bytes[(colon + 1)...]
        }
        guard hostEnd > bytes.startIndex, let normalized = normalizedPercentEncoding(bytes[..<hostEnd]) else { return nil }
        // Host names are case-insensitive (RFC 3986 §3.2.2): lower case, after decoding (a
        // decoded "%51" is a "Q" too), but not the hex digits of the escapes that remain.
        var host = Array(normalized.utf8)
        var index = 0
        while index < host.count {
            if host[index] == UInt8(ascii: "%") { index += 3; continue }
            if host[index] >= UInt8(ascii: "A") && host[index] <= UInt8(ascii: "Z") { host[index] += 32 }
            index += 1
        }
        // port = *DIGIT; an empty port is the default one (RFC 3986 §6.2.3).
        guard port.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }), port.count <= 5 else { return nil }
        let number = port.isEmpty ? defaultPort : Int(String(decoding: port, as: UTF8.self))!
        guard number <= 65535 else { return nil }
        return String(decoding: host, as: UTF8.self) + (number == defaultPort ? "" : ":" + String(number))
    }

    // unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~"
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"): true
        default: false
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    /// `bytes` with each `%XX` in upper case, or decoded when it encodes an unreserved
    /// character (RFC 3986 §6.2.2.1, §6.2.2.2); nil for a `%` not followed by two hex digits.
    private static func normalizedPercentEncoding(_ bytes: ArraySlice<UInt8>) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            guard bytes[index] == UInt8(ascii: "%") else {
                out.append(bytes[index])
                index += 1
                continue
            }
            guard index + 2 < bytes.endIndex, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) else { return nil }
            let decoded = high << 4 | low
            if isUnreserved(decoded) {
                out.append(decoded)
            } else {
                let digits = Array("0123456789ABCDEF".utf8)
                out += [UInt8(ascii: "%"), digits[Int(high)], digits[Int(low)]]
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// RFC 3986 §5.2.4 on an absolute path: `.` segments dropped, `..` removes the segment
    /// before it (never above the root), a trailing `.` or `..` leaves a trailing `/`.
    private static func removingDotSegments(_ path: String) -> String {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        var output: [Substring] = []
        for (offset, segment) in segments.enumerated() {
            let isLast = offset == segments.count - 1
            switch segment {
            case ".": if isLast { output.append("") }
            case "..":
                if !output.isEmpty { output.removeLast() }
                if isLast { output.append("") }
            default: output.append(segment)
            }
        }
        return "/" + output.joined(separator: "/")
    }
}
