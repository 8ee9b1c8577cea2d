import BatonCore

/// The one escaper for what `baton admin` writes to a terminal: User-Agents, device ids and
/// names, audit details arrive from the network or were stored by an older version, and a C1
/// control (U+009B is CSI), a bidi override or a zero-width character in them would move the
/// cursor, rewrite the screen or reorder the line an operator reads. Works per Unicode scalar,
/// never per `Character` (a grapheme cluster can hide a control behind the scalar before it).
enum TerminalText {
    /// `text` with every control or format scalar written visibly as `\u{9b}`, and `\` as `\\`
    /// so that an escape and a literal `\u{9b}` someone typed cannot be confused.
    static func escape(_ text: String) -> String {
        // Printable ASCII without a backslash (nearly every cell) needs nothing.
        guard text.utf8.contains(where: { $0 < 0x20 || $0 >= 0x7F || $0 == UInt8(ascii: "\\") }) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar == "\\" {
                out += "\\\\"
            } else if scalar.isControlOrFormat {
                out += scalar.visibleEscape
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A JSON text for a terminal: the same JSON value, with each control or format scalar that
    /// appears raw in its strings written as a `\u` escape (RFC 8259 §7; a surrogate pair beyond
    /// U+FFFF). Outside strings JSON text is ASCII, so every such scalar is inside one.
    static func json(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 < 0x20 || $0 >= 0x7F }) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            guard scalar.isControlOrFormat, scalar != "\n" else {
                out.unicodeScalars.append(scalar)
                continue
            }
            for unit in String(scalar).utf16 {
                let hex = String(unit, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        return out
    }
}
