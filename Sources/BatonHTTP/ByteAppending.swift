/// Appending text to byte buffers (requests' output, response bodies, log lines) without
/// the generic per-character path that `append(contentsOf: text.utf8)` takes for literals
/// and short strings, which Swift stores inline rather than as contiguous UTF-8.
extension Array where Element == UInt8 {
    /// Appends a literal's bytes.
    package mutating func append(_ literal: StaticString) {
        append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Appends `text`'s UTF-8 bytes.
    package mutating func append(utf8 text: String) {
        var text = text
        text.withUTF8 { append(contentsOf: $0) }
    }
}
