/// What Baton refuses in identifiers and escapes in its output: scalars that change how a
/// terminal or a page shows the text around them instead of showing themselves.
extension Unicode.Scalar {
    /// A control character (C0, DEL, and C1 such as U+009B, the 8-bit CSI that starts a terminal
    /// escape sequence), a format character (Cf: the bidi overrides and isolates U+202A-U+202E and
    /// U+2066-U+2069, zero-width characters, and the Arabic number signs U+0600-U+0605 that fuse
    /// with the character after them), or a line or paragraph separator (U+2028, U+2029).
    package var isControlOrFormat: Bool {
        switch properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }

    /// The visible stand-in Baton's output writes for a control or format scalar: `\u{9b}`
    /// (Swift's own notation: lower-case hex, no padding).
    package var visibleEscape: String { "\\u{" + String(value, radix: 16) + "}" }

    /// `U+009B`: how error messages name a scalar (four hex digits at least, upper case).
    package var codePointName: String {
        let hex = String(value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}
