/// A JSON value with a deterministic serialisation (object keys sorted), used for audit
/// `detail` objects and small responses without Foundation's overhead.
package enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Compact JSON text.
    package var text: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .string(let value): Self.writeString(value, to: &out)
        case .array(let values):
            out += "["
            for (index, value) in values.enumerated() {
                if index > 0 { out += "," }
                value.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                Self.writeString(key, to: &out)
                out += ":"
                members[key]!.write(to: &out)
            }
            out += "}"
        }
    }

    /// Appends `value` as a JSON string literal (RFC 8259 §7).
    package static func writeString(_ value: String, to out: inout String) {
        out += "\""
        // Most strings need no escape at all (usernames, device ids, paths): append them whole.
        if !needsEscaping(value) {
            out += value
            out += "\""
            return
        }
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

extension JSONValue {
    /// `.string(value)` or `.null`.
    package static func optional(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }

    /// Appends `value` as a JSON string literal to bytes: the same text as the `String`
    /// variant, without a `String` in between when nothing needs escaping (the usual case).
    package static func writeString(_ value: String, to out: inout [UInt8]) {
        guard needsEscaping(value) else {
            out.append(34)
            var value = value
            value.withUTF8 { out.append(contentsOf: $0) }  // contiguous even for a small string
            out.append(34)
            return
        }
        var text = ""
        writeString(value, to: &text)
        out.append(contentsOf: text.utf8)
    }

    /// Whether `value` holds a byte that may need an escape.
    // 0xE2 leads U+2028 and U+2029 (E2 80 A8/A9), so any string holding it takes the slow path.
    private static func needsEscaping(_ value: String) -> Bool {
        value.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C || $0 == 0x7F || $0 == 0xE2 })
    }
}
