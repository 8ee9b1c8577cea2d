/// Tests on the text of a SQL statement, for the checks `Transaction` makes on every statement
/// it runs (`isDeferrable`, `mayChangeHeads`). Baton's statements are ASCII, and for ASCII
/// text these compare bytes: Swift's `String.contains(_:)` compares characters and builds a
/// search table on every call, which made these checks about a tenth of the server's CPU per
/// exchange on PostgreSQL (docs/benchmarks.md, "PostgreSQL exchange: where the CPU goes").
/// Any other text gets the `String` methods, so the answer is always theirs.
enum SQLText {
    /// Whether `text` begins with `prefix` (as `text.hasPrefix(prefix)`).
    static func hasPrefix(_ text: String, _ prefix: StaticString) -> Bool {
        let answer = text.utf8.withContiguousStorageIfAvailable { bytes -> Bool? in
            guard isASCII(bytes) else { return nil }
            return prefix.withUTF8Buffer { wanted in
                bytes.count >= wanted.count && UnsafeBufferPointer(rebasing: bytes[..<wanted.count]).elementsEqual(wanted)
            }
        } ?? nil
        return answer ?? text.hasPrefix(prefix.description)
    }

    /// Whether `word` occurs in `text` (as `text.contains(word)`).
    static func contains(_ text: String, _ word: StaticString) -> Bool {
        let answer = text.utf8.withContiguousStorageIfAvailable { bytes -> Bool? in
            guard isASCII(bytes) else { return nil }
            return word.withUTF8Buffer { occurs($0, in: bytes) }
        } ?? nil
        return answer ?? text.contains(word.description)
    }

    private static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.allSatisfy { $0 < 0x80 }
    }

    /// Whether `needle` occurs in `bytes`: each place its first byte is, compared in full.
    private static func occurs(_ needle: UnsafeBufferPointer<UInt8>, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = needle.first else { return true }
        guard bytes.count >= needle.count else { return false }
        var start = 0
        while start <= bytes.count - needle.count {
            if bytes[start] == first {
                var matched = 1
                while matched < needle.count, bytes[start + matched] == needle[matched] { matched += 1 }
                if matched == needle.count { return true }
            }
            start += 1
        }
        return false
    }
}
