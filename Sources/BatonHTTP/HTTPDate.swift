import Glibc
import Synchronization

/// The `Date` header value (IMF-fixdate, RFC 9110 §5.6.7), formatted at most once a second.
enum HTTPDate {
    private static let cache = Mutex<(second: Int, text: String)>((-1, ""))

    static func now() -> String {
        var seconds = time(nil)
        return cache.withLock { cached in
            if cached.second == seconds { return cached.text }
            var parts = tm()
            gmtime_r(&seconds, &parts)
            var buffer = [CChar](repeating: 0, count: 64)
            let length = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
            cached = (seconds, String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self))
            return cached.text
        }
    }
}
