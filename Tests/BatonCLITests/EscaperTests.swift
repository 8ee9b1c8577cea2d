@testable import BatonCLI
import Testing

/// The HTML escaper (`HTMLText`), with a table of hostile inputs: no `<`, `>`, `"` or `'` byte survives,
/// and every `&` opens one of the five entities, whatever scalar precedes or follows.
struct HTMLEscaperTests {
    /// The Grapheme_Cluster_Break=Prepend scalars of Unicode 16 (GraphemeBreakProperty.txt).
    static let prepend: [Unicode.Scalar] = [0x600, 0x601, 0x602, 0x603, 0x604, 0x605, 0x6DD, 0x70F, 0x890, 0x891, 0x8E2, 0xD4E, 0x110BD, 0x110CD,
                                            0x111C2, 0x111C3, 0x1193F, 0x11941, 0x113D1, 0x11A3A, 0x11A84, 0x11A85, 0x11A86, 0x11A87, 0x11A88, 0x11A89,
                                            0x11D46, 0x11F02].map { Unicode.Scalar($0)! }
    /// Combining marks: acute, long solidus overlay (`<` + U+0338 is canonically `≮`), enclosing circle, ZWJ.
    static let combining: [Unicode.Scalar] = ["\u{301}", "\u{338}", "\u{20DD}", "\u{200D}"]
    static let specials: [String] = ["<", ">", "&", "\"", "'"]

    static var hostile: [String] {
        var inputs = ["<script>alert(1)</script>", "\"><img src=x onerror=alert(1)>", "' onmouseover='alert(1)", "&lt;", "&#60;", "]]><x>"]
        for scalar in prepend + combining {
            for special in specials {
                inputs += [String(scalar) + special, special + String(scalar), String(scalar) + special + String(scalar),
                           "\(scalar)<img src=x onerror=alert(document.domain) \(scalar)>"]
            }
        }
        return inputs
    }

    /// Whether `html` could open a tag, close an attribute or start an unexpected entity.
    static func isInert(_ html: String) -> Bool {
        let bytes = Array(html.utf8)
        for (index, byte) in bytes.enumerated() {
            switch byte {
            case UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "\""), UInt8(ascii: "'"): return false
            case UInt8(ascii: "&"):
                let rest = bytes[index...]
                guard ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].contains(where: { rest.starts(with: $0.utf8) }) else { return false }
            default: continue
            }
        }
        return true
    }

    @Test(arguments: hostile)
    func hostileTextIsInertInHTML(_ text: String) {
        #expect(Self.isInert(HTMLText.escape(text)), "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
    }

    @Test func everyPrependScalarOfThisToolchainIsInTheTable() {
        // Found, not listed: a scalar that fuses with a following `<` is what the attack needs.
        let fusing = (0...0x10FFFF).compactMap(Unicode.Scalar.init).filter { $0 != "\r" && (String($0) + "<").count == 1 }
        #expect(Set(fusing).isSubset(of: Set(Self.prepend)), "\(Set(fusing).subtracting(Self.prepend).map { String($0.value, radix: 16) })")
    }
}

/// The terminal escaper (`TerminalText`): nothing that acts on a terminal survives, and the
/// escape is visible and cannot be confused with text someone typed.
struct TerminalEscaperTests {
    @Test(arguments: [
        ("curl/8.4.0", "curl/8.4.0"),
        ("a\u{1B}[2Jb", #"a\u{1b}[2Jb"#),  // ESC: the 7-bit CSI
        ("a\u{9B}2Jb", #"a\u{9b}2Jb"#),  // the 8-bit CSI
        ("\u{9D}0;title\u{9C}", #"\u{9d}0;title\u{9c}"#),  // OSC … ST
        ("\u{85}\u{80}\u{9F}\u{7F}\u{0}", #"\u{85}\u{80}\u{9f}\u{7f}\u{0}"#),
        ("evil\u{202E}txt.exe", #"evil\u{202e}txt.exe"#),  // right-to-left override
        ("\u{2066}a\u{2067}b\u{2068}c\u{2069}\u{202A}\u{202B}\u{202C}\u{202D}", #"\u{2066}a\u{2067}b\u{2068}c\u{2069}\u{202a}\u{202b}\u{202c}\u{202d}"#),
        ("ad\u{200B}min\u{200D}\u{FEFF}\u{AD}", #"ad\u{200b}min\u{200d}\u{feff}\u{ad}"#),  // zero-width and soft hyphen
        ("\u{600}<\u{6DD}>", #"\u{600}<\u{6dd}>"#),  // prepend scalars are format characters too
        ("line\u{2028}para\u{2029}", #"line\u{2028}para\u{2029}"#),
        ("tag\u{E0041}\u{E007F}", #"tag\u{e0041}\u{e007f}"#),  // tag characters
        (#"typed \u{9b}"#, #"typed \\u{9b}"#),  // a literal escape stays distinguishable
        ("café ü 日本 😀 e\u{301}", "café ü 日本 😀 e\u{301}"),  // text is text
    ])
    func controlAndFormatCharactersAreShownAsEscapes(_ input: String, _ expected: String) {
        let escaped = TerminalText.escape(input)
        #expect(escaped == expected)
        #expect(!escaped.unicodeScalars.contains { $0.isControlOrFormat })
    }

    @Test func everyControlAndFormatScalarIsEscaped() {
        let all = (0...0x10FFFF).compactMap(Unicode.Scalar.init).filter(\.isControlOrFormat)
        #expect(all.count > 200 && all.contains("\u{9B}") && all.contains("\u{202E}") && all.contains("\u{110BD}"))
        let escaped = TerminalText.escape(String(String.UnicodeScalarView(all)))
        #expect(!escaped.unicodeScalars.contains { $0.isControlOrFormat })
        #expect(escaped == all.map(\.visibleEscape).joined())
    }

    @Test(arguments: [
        (#"{"a":"x"}"#, #"{"a":"x"}"#),
        ("{\"ua\":\"curl\u{9B}2J\u{202E}\"}\n", #"{"ua":"curl\u009b2J\u202e"}"# + "\n"),
        ("{\"t\":\"\u{E0041}\"}", #"{"t":"\udb40\udc41"}"#),  // beyond U+FFFF: a surrogate pair
        ("{\"k\":\"caf\u{E9} 😀\"}", "{\"k\":\"caf\u{E9} 😀\"}"),
    ])
    func jsonKeepsItsValueAndLosesItsControls(_ input: String, _ expected: String) {
        #expect(TerminalText.json(input) == expected)
    }
}
