import Glibc

/// The `Date` header value (IMF-fixdate, RFC 9110 §5.6.7), reformatted at most once a second.
/// Each connection thread keeps its own, so no lock is shared between requests.
struct HTTPDate {
    private var second = -1
    private var text = ""
    private var bytes: [UInt8] = []

    /// The current value as bytes, for the response writer.
    mutating func nowBytes() -> [UInt8] {
        _ = now()
        return bytes
    }

    /// The current value.
    mutating func now() -> String {
        var seconds = time(nil)
        if seconds == second { return text }
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let length = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
        second = seconds
        bytes = buffer[0..<length].map { UInt8(bitPattern: $0) }
        text = String(decoding: bytes, as: UTF8.self)
        return text
    }
}
