/// Tests on the text of a SQL statement, for the checks `Transaction` makes on every statement
/// it runs (`isDeferrable`, `mayChangeHeads`). Baton's statements are ASCII, and for ASCII
/// text these compare bytes: Swift's `String.contains(_:)` compares characters and builds a
/// search table on every call, which made these checks about a tenth of the server's CPU per
/// exchange on PostgreSQL (docs/benchmarks.md, "PostgreSQL exchange: where the CPU goes").
/// Any other text gets the `String` methods, so the answer is always theirs (for words of
/// ASCII without line ends, which the methods assert: in ASCII text the only character of
/// more than one byte is CR LF).
enum SQLText {
    /// Whether `text` begins with `prefix` (as `text.hasPrefix(prefix)`).
    static func hasPrefix(_ text: String, _ prefix: StaticString) -> Bool {
        assert(isPlainASCII(prefix), "SQLText compares ASCII words without line ends")
        // Only the prefix's length and one byte more are read: when those are ASCII, the
        // text's first characters are those bytes, and one ends where the prefix does.
        let answer = text.utf8.withContiguousStorageIfAvailable { bytes -> Bool? in
            prefix.withUTF8Buffer { wanted -> Bool? in
                guard bytes.count >= wanted.count else { return false }  // fewer bytes, fewer characters
                let head = UnsafeBufferPointer(rebasing: bytes[..<min(bytes.count, wanted.count + 1)])
                guard isASCII(head) else { return nil }
                return UnsafeBufferPointer(rebasing: head[..<wanted.count]).elementsEqual(wanted)
            }
        } ?? nil
        return answer ?? text.hasPrefix(prefix.description)
    }

    /// Whether `word` occurs in `text` (as `text.contains(word)`).
    static func contains(_ text: String, _ word: StaticString) -> Bool {
        assert(isPlainASCII(word), "SQLText compares ASCII words without line ends")
        let answer = text.utf8.withContiguousStorageIfAvailable { bytes -> Bool? in
            guard isASCII(bytes) else { return nil }
            return word.withUTF8Buffer { occurs($0, in: bytes) }
        } ?? nil
        return answer ?? text.contains(word.description)
    }

    /// Whether bytes and characters agree on `word` in any ASCII text: ASCII (a character of
    /// another script may equal an ASCII one) without a CR or LF (CR LF is one character).
    private static func isPlainASCII(_ word: StaticString) -> Bool {
        word.withUTF8Buffer { $0.allSatisfy { $0 < 0x80 && $0 != 0x0D && $0 != 0x0A } }
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
