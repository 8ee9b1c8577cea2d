import Glibc

/// The `Date` header value (IMF-fixdate, RFC 9110 §5.6.7), reformatted at most once a second.
/// Each connection thread keeps its own, so no lock is shared between requests.
struct HTTPDate {
    private var second = -1
    private var text = ""

    mutating func now() -> String {
        var seconds = time(nil)
        if seconds == second { return text }
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let length = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
        second = seconds
        text = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text
    }
}
