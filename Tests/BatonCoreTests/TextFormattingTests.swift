@testable import BatonCore
import Testing

/// The hand-written formatters on verify's path give exactly what the general ones did.
struct TextFormattingTests {
    @Test(arguments: [
        ("alice", #""alice""#),
        ("", #""""#),
        ("a\"b\\c", #""a\"b\\c""#),
        ("line\nbreak\r\ttab", #""line\nbreak\r\ttab""#),
        ("\u{01}\u{1F}\u{7F}", #""\u0001\u001f\u007f""#),
        ("sep\u{2028}par\u{2029}", #""sep\u2028par\u2029""#),
        ("caf\u{E9} \u{20AC} \u{2026}", "\"caf\u{E9} \u{20AC} \u{2026}\""),  // E2-led characters that need no escape
        ("😀", "\"😀\""),
    ])
    func jsonStringsAreEscapedPerRFC8259(_ value: String, _ expected: String) {
        var out = ""
        JSONValue.writeString(value, to: &out)
        #expect(out == expected)
        var bytes: [UInt8] = []
        JSONValue.writeString(value, to: &bytes)
        #expect(bytes == Array(expected.utf8))
    }

    @Test(arguments: [Int64(0), 999, 1_000, 86_399_999, 1_795_000_000_123, 253_402_300_799_000, 253_402_300_800_000, -1, -62_135_596_800_001])
    func rfc3339AppendedAsBytesIsTheFormattedText(_ milliseconds: Int64) {
        var bytes: [UInt8] = [120]
        RFC3339.append(Instant(milliseconds: milliseconds), to: &bytes)
        #expect(bytes == [120] + Array(RFC3339.format(Instant(milliseconds: milliseconds)).utf8))
    }

    @Test(arguments: [
        (Int64(1), "0000000000000001"),
        (Int64(0x1A2B), "0000000000001a2b"),
        (Int64.max, "7fffffffffffffff"),
        (Int64(0x0123_4567_89AB_CDEF), "0123456789abcdef"),
    ])
    func chainIDsPrintAsSixteenLowercaseHexDigits(_ raw: Int64, _ expected: String) {
        #expect(ChainID(rawValue: raw).description == expected)
        #expect(ChainID(hex: expected) == ChainID(rawValue: raw))
    }
}
