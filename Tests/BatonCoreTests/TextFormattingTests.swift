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
        var bytes: [UInt8] = [120]
        ChainID(rawValue: raw).appendHex(to: &bytes)
        #expect(bytes == [120] + Array(expected.utf8))
    }
}

/// Duplicate member names in a JSON body, found at any depth (`JSONDuplicateKeys`).
struct JSONDuplicateKeyTests {
    @Test(arguments: [
        (#"{"username":"alice","username":"bob"}"#, "username"),
        (#"{"username":"alice","user\u006eame":"bob"}"#, "username"),
        (#"{"a":{"b":1,"b":2}}"#, "b"),
        (#"{"a":[1,{"c":[],"c":{}}]}"#, "c"),
        (#"{"\ud83d\ude00":1,"😀":2}"#, "😀"),
        ("{\"caf\u{E9}\":1,\"cafe\u{301}\":2}", "caf\u{E9}"),  // canonically equal: one key to Swift
        (#"{"a\"b":1,"a\u0022b":2}"#, "a\"b"),
        (#" { "x" : "y" , "x" : "y" } "#, "x"),
    ] as [(String, String?)] + [
        (#"{"username":"alice","password":"username"}"#, nil),  // a value equal to a key
        (#"{"a":{"a":{"a":1}},"b":[{"a":1},{"a":1}]}"#, nil),  // the same key in different objects
        (#"{"a":"},{\"a\":1,"}"#, nil),  // braces and quotes inside a string
        (#"[{"a":1},{"a":2}]"#, nil),
        (#"{}"#, nil),
    ])
    func aKeyGivenTwiceInOneObjectIsFound(_ json: String, _ duplicate: String?) {
        #expect(JSONDuplicateKeys.first(in: Array(json.utf8)) == duplicate)
    }
}

/// Identifiers refuse control and format characters: C0, DEL, C1, bidi, zero-width.
struct IdentifierCharacterTests {
    @Test(arguments: [0x0, 0x1B, 0x7F, 0x80, 0x85, 0x9B, 0x9F, 0xAD, 0x600, 0x61C, 0x200B, 0x200E, 0x2028, 0x202A, 0x202E, 0x2066, 0x2069, 0xFEFF, 0xE0001])
    func controlOrFormatScalars(_ value: UInt32) {
        #expect(Unicode.Scalar(value)!.isControlOrFormat)
    }

    @Test(arguments: [0x20, 0x41, 0x7E, 0xA0, 0xE9, 0x301, 0xD4E, 0x2019, 0x3042, 0x1F600])
    func printableScalars(_ value: UInt32) {
        #expect(!Unicode.Scalar(value)!.isControlOrFormat)
    }
}
