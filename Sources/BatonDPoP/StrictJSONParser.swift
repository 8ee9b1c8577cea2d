/// A strict JSON parser (RFC 8259) for the small objects of a proof, with no Foundation:
/// it refuses what Foundation would quietly repair or pick from. A member name given twice
/// in one object is refused (as `JSONDuplicateKeys` refuses it in request bodies: names
/// compared after unescaping and as Swift compares strings), and so are invalid UTF-8, lone
/// surrogates, control characters in strings, trailing bytes, and nesting deeper than
/// `maximumDepth`.
package struct StrictJSONParser {
    /// Why bytes are not accepted as JSON; `offset` is where the parser stopped.
    package enum Failure: Error, Equatable {
        case syntax(offset: Int)
        case duplicateName(String)
        case tooDeep
    }

    /// The deepest nesting of objects and arrays accepted (a proof's header nests two).
    package static let maximumDepth = 8

    private let bytes: [UInt8]
    private var index = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Parses `bytes` as one JSON value with optional surrounding whitespace.
    /// - Throws: `Failure` naming the first problem.
    package static func parse(_ bytes: [UInt8]) throws(Failure) -> JSONNode {
        var parser = StrictJSONParser(bytes)
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw .syntax(offset: parser.index) }
        return value
    }

    // ws = *( %x20 / %x09 / %x0A / %x0D )
    private mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
            index += 1
        }
    }

    private var failure: Failure { .syntax(offset: index) }

    private mutating func value(depth: Int) throws(Failure) -> JSONNode {
        skipWhitespace()
        guard index < bytes.count else { throw failure }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            guard depth < Self.maximumDepth else { throw .tooDeep }
            return try object(depth: depth + 1)
        case UInt8(ascii: "["):
            guard depth < Self.maximumDepth else { throw .tooDeep }
            return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        default: return .number(try number())
        }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw failure }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { throw failure }
        index += count
    }

    // object = begin-object [ member *( value-separator member ) ] end-object
    private mutating func object(depth: Int) throws(Failure) -> JSONNode {
        index += 1
        // Room for a proof's objects (three to six members) from the start: no regrowth.
        var members = [String: JSONNode](minimumCapacity: 8)
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure }
            let name = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure }
            index += 1
            let member = try value(depth: depth)
            guard members.updateValue(member, forKey: name) == nil else { throw .duplicateName(name) }
            skipWhitespace()
            guard index < bytes.count else { throw failure }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            guard bytes[index] == UInt8(ascii: "}") else { throw failure }
            index += 1
            return .object(members)
        }
    }

    // array = begin-array [ value *( value-separator value ) ] end-array
    private mutating func array(depth: Int) throws(Failure) -> JSONNode {
        index += 1
        var elements: [JSONNode] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            elements.append(try value(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw failure }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            guard bytes[index] == UInt8(ascii: "]") else { throw failure }
            index += 1
            return .array(elements)
        }
    }

    // number = [ minus ] int [ frac ] [ exp ]; int = zero / ( digit1-9 *DIGIT )
    private mutating func number() throws(Failure) -> Double {
        let start = index
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw failure }
        if bytes[index] == UInt8(ascii: "0") { index += 1 } else { skipDigits() }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure }
            skipDigits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure }
            skipDigits()
        }
        // The grammar above is a subset of what Double(String) reads; out of range is infinity.
        guard let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)), value.isFinite else {
            throw .syntax(offset: start)
        }
        return value
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
    }

    // string = quotation-mark *char quotation-mark; unescaped = %x20-21 / %x23-5B / %x5D-10FFFF
    private mutating func string() throws(Failure) -> String {
        index += 1
        // The usual string (every name and value of a proof a client library writes):
        // printable ASCII with no escape, which is its own UTF-8 and is taken as it stands,
        // with one allocation at most (none up to 15 bytes). Anything else goes on below,
        // from where this stopped, byte for byte as before.
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return String(decoding: bytes[start..<(index - 1)], as: UTF8.self)
            }
            guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { break }
            index += 1
        }
        var utf8 = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                // Invalid UTF-8 is refused, not replaced: two spellings must not become one name.
                guard let text = String(validating: utf8, as: UTF8.self) else { throw failure }
                return text
            case UInt8(ascii: "\\"):
                index += 1
                try escape(into: &utf8)
            case 0..<0x20: throw failure
            default:
                utf8.append(byte)
                index += 1
            }
        }
        throw failure
    }

    /// The byte each one-character escape stands for (RFC 8259 §7).
    private static let shortEscapes: [UInt8: UInt8] = [
        UInt8(ascii: "\""): 0x22, UInt8(ascii: "\\"): 0x5C, UInt8(ascii: "/"): 0x2F, UInt8(ascii: "b"): 0x08,
        UInt8(ascii: "f"): 0x0C, UInt8(ascii: "n"): 0x0A, UInt8(ascii: "r"): 0x0D, UInt8(ascii: "t"): 0x09,
    ]

    // escape = %x22 / %x5C / %x2F / %x62 / %x66 / %x6E / %x72 / %x74 / %x75 4HEXDIG
    private mutating func escape(into utf8: inout [UInt8]) throws(Failure) {
        guard index < bytes.count else { throw failure }
        let escaped = bytes[index]
        index += 1
        if let byte = Self.shortEscapes[escaped] {
            utf8.append(byte)
            return
        }
        guard escaped == UInt8(ascii: "u") else { throw failure }
        var scalar = try hexUnit()
        if (0xDC00...0xDFFF).contains(scalar) { throw failure }  // a low surrogate alone
        if (0xD800...0xDBFF).contains(scalar) {
            // A high surrogate must be followed by an escaped low one (RFC 8259 §7).
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else { throw failure }
            index += 2
            let low = try hexUnit()
            guard (0xDC00...0xDFFF).contains(low) else { throw failure }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        }
        guard let character = Unicode.Scalar(scalar) else { throw failure }
        utf8.append(contentsOf: String(character).utf8)
    }

    private mutating func hexUnit() throws(Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure }
        var unit: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure
            }
            unit = unit << 4 | UInt32(digit)
            index += 1
        }
        return unit
    }
}
