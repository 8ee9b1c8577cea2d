/// Finds a member name given twice in one JSON object. RFC 8259 §4 says names "SHOULD be
/// unique" and leaves duplicates to each parser: Foundation keeps the last one, so
/// `{"username":"alice","username":"bob"}` would log in bob while a proxy or a log reader that
/// keeps the first sees alice. Baton refuses such a body instead of picking one.
package enum JSONDuplicateKeys {
    /// The first name that appears twice in one object, at any depth, names compared after
    /// unescaping (`"user\u006eame"` is `"username"`) and as Swift compares strings (canonical
    /// equivalents are one key, as they are in the `[String: Any]` a parser hands back).
    /// `bytes` must be JSON a parser accepted: this walks the tokens without validating them.
    package static func first(in bytes: [UInt8]) -> String? {
        var frames: [Frame] = []
        var index = 0
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "{"): frames.append(Frame(isObject: true))
            case UInt8(ascii: "["): frames.append(Frame(isObject: false))
            case UInt8(ascii: "}"), UInt8(ascii: "]"): if !frames.isEmpty { frames.removeLast() }
            case UInt8(ascii: ","): if let last = frames.indices.last, frames[last].isObject { frames[last].expectsName = true }
            case UInt8(ascii: "\""):
                let (text, end) = string(in: bytes, openingAt: index)
                index = end
                // In an object, the string after `{` or `,` is a name; any other is a value.
                if let last = frames.indices.last, frames[last].isObject, frames[last].expectsName {
                    guard frames[last].names.insert(text).inserted else { return text }
                    frames[last].expectsName = false
                }
                continue
            default: break
            }
            index += 1
        }
        return nil
    }

    private struct Frame {
        let isObject: Bool
        var expectsName: Bool
        var names: Set<String> = []
        init(isObject: Bool) {
            self.isObject = isObject
            self.expectsName = isObject
        }
    }

    /// The string whose opening quote is at `start`, unescaped, and the index after its closing quote.
    private static func string(in bytes: [UInt8], openingAt start: Int) -> (String, Int) {
        var utf8: [UInt8] = []
        var index = start + 1
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { return (String(decoding: utf8, as: UTF8.self), index + 1) }
            guard byte == UInt8(ascii: "\\"), index + 1 < bytes.count else {
                utf8.append(byte)
                index += 1
                continue
            }
            let escaped = bytes[index + 1]
            index += 2
            switch escaped {
            case UInt8(ascii: "b"): utf8.append(8)
            case UInt8(ascii: "f"): utf8.append(12)
            case UInt8(ascii: "n"): utf8.append(10)
            case UInt8(ascii: "r"): utf8.append(13)
            case UInt8(ascii: "t"): utf8.append(9)
            case UInt8(ascii: "u"):
                guard var unit = hex4(bytes, at: index) else { continue }
                index += 4
                // A UTF-16 surrogate pair (RFC 8259 §7): a high surrogate, then `\u` and a low one.
                if (0xD800...0xDBFF).contains(unit), index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"),
                   bytes[index + 1] == UInt8(ascii: "u"), let low = hex4(bytes, at: index + 2), (0xDC00...0xDFFF).contains(low) {
                    unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    index += 6
                }
                utf8.append(contentsOf: String(Unicode.Scalar(unit) ?? "\u{FFFD}").utf8)
            default: utf8.append(escaped)  // \" \\ \/
            }
        }
        return (String(decoding: utf8, as: UTF8.self), index)
    }

    private static func hex4(_ bytes: [UInt8], at index: Int) -> UInt32? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for byte in bytes[index..<index + 4] {
            guard let digit = Character(Unicode.Scalar(byte)).hexDigitValue else { return nil }
            value = value << 4 | UInt32(digit)
        }
        return value
    }
}
