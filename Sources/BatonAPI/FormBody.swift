import BatonCore

/// An `application/x-www-form-urlencoded` body (the WHATWG URL standard's parser, strict):
/// the parameters of RFC 7662 introspection and RFC 7009 revocation. Pure: bytes in, names
/// and values out, or a 400 naming the problem.
struct FormBody: Equatable {
    /// Each parameter's one value.
    private(set) var values: [String: String] = [:]

    /// Parses `bytes`. A parameter given twice is refused (RFC 6749 §3.2: "Request and
    /// response parameters MUST NOT be included more than once"), and so is a malformed
    /// percent-escape or text that is not UTF-8: reject, don't repair.
    /// - Throws: `.invalidArgument` (400 invalid_request).
    init(_ bytes: [UInt8]) throws(BatonError) {
        guard !bytes.isEmpty else { return }
        for pair in bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            let name = try Self.decode(parts[0])
            let value = parts.count == 2 ? try Self.decode(parts[1]) : ""
            guard values[name] == nil else {
                throw .invalidArgument("The parameter '\(Self.shown(name))' is given more than once.")
            }
            values[name] = value
        }
    }

    /// `name`'s value; nil when absent or empty.
    func value(_ name: String) -> String? {
        guard let value = values[name], !value.isEmpty else { return nil }
        return value
    }

    /// Percent-decodes one form component, `+` being a space.
    /// - Throws: `.invalidArgument` for a `%` not followed by two hex digits, or bytes that are not UTF-8.
    static func decode(_ component: ArraySlice<UInt8>) throws(BatonError) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(component.count)
        var index = component.startIndex
        while index < component.endIndex {
            let byte = component[index]
            if byte == UInt8(ascii: "+") {
                out.append(32)
            } else if byte == UInt8(ascii: "%") {
                guard let high = hex(component[safe: index + 1]), let low = hex(component[safe: index + 2]) else {
                    throw .invalidArgument("The body has a malformed percent-escape; send it as application/x-www-form-urlencoded.")
                }
                out.append(high << 4 | low)
                index += 2
            } else {
                out.append(byte)
            }
            index += 1
        }
        guard let text = String(validating: out, as: UTF8.self) else {
            throw .invalidArgument("The body is not UTF-8 once percent-decoded.")
        }
        return text
    }

    private static func hex(_ byte: UInt8?) -> UInt8? {
        switch byte {
        case let b? where b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case let b? where b >= UInt8(ascii: "a") && b <= UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        case let b? where b >= UInt8(ascii: "A") && b <= UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func shown(_ name: String) -> Substring {
        name.count > 32 ? name.prefix(32) + "…" : Substring(name)
    }
}

private extension ArraySlice where Element == UInt8 {
    subscript(safe index: Int) -> UInt8? { indices.contains(index) ? self[index] : nil }
}
