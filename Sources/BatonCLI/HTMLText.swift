import BatonCore

/// The one escaper for text in Baton's HTML pages (`chain show --format html`), safe in element
/// content and in a quoted attribute value alike. Works per Unicode scalar, never per
/// `Character`: a prepend scalar (U+0600, U+0D4E, U+110BD, …) fuses with a following `<` into
/// one `Character` that is not equal to `"<"`, and a combining mark after `"` does the same.
enum HTMLText {
    /// `&`, `<`, `>`, `"` and `'` as entities; a control or format scalar (a bidi override that
    /// would reorder the line, a zero-width character) shown as `\u{202e}`, and `\` as `\\`, the
    /// terminal's notation (`TerminalText`).
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case "\\": out += "\\\\"
            case _ where scalar.isControlOrFormat: out += scalar.visibleEscape
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
