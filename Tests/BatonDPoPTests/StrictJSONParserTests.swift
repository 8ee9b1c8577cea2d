@testable import BatonDPoP
import Testing

/// The proof's JSON: RFC 8259, strictly.
struct StrictJSONParserTests {
    private func parse(_ text: String) throws(StrictJSONParser.Failure) -> JSONNode { try StrictJSONParser.parse(Array(text.utf8)) }

    @Test func parsesEveryKindOfValue() throws {
        let value = try parse(#" {"a": [1, -2.5e3, true, false, null], "b": {"c": "d\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}} "#)
        #expect(value == .object([
            "a": .array([.number(1), .number(-2500), .bool(true), .bool(false), .null]),
            "b": .object(["c": .string("d\"\\/\u{8}\u{c}\n\r\té😀")]),
        ]))
    }

    @Test(arguments: [#"{"a":1,"a":2}"#, #"{"a":1,"\u0061":2}"#, #"{"x":{"é":1,"e\u0301":2}}"#])
    func duplicateNameIsRefused(_ text: String) {
        #expect(throws: StrictJSONParser.Failure.self) { try parse(text) }
        do { _ = try parse(text) } catch {
            guard case .duplicateName = error else { Issue.record("\(error)"); return }
        }
    }

    @Test(arguments: [
        "", "{", "}", #"{"a"}"#, #"{"a":}"#, #"{"a":1,}"#, "[1,]", "01", "1.", ".5", "-", "1e", "+1", "NaN", "Infinity", "1e999",
        "tru", "nul", #""\x""#, #""\u12""#, #""\ud800""#, #""\udc00""#, #""\ud800\u0041""#, "\"a\u{1}\"", "'a'", "{} {}",
        "[[[[[[[[[1]]]]]]]]]",
    ])
    func invalidJSONIsRefused(_ text: String) {
        #expect(throws: StrictJSONParser.Failure.self) { try parse(text) }
    }

    @Test func invalidUTF8IsRefused() {
        #expect(throws: StrictJSONParser.Failure.self) { try StrictJSONParser.parse([0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: StrictJSONParser.Failure.self) { try StrictJSONParser.parse([0x22, 0xED, 0xA0, 0x80, 0x22]) }  // a surrogate in UTF-8
    }

    @Test func nestingUpToTheLimitIsAccepted() throws {
        let depth = StrictJSONParser.maximumDepth
        _ = try parse(String(repeating: "[", count: depth) + String(repeating: "]", count: depth))
        #expect(throws: StrictJSONParser.Failure.tooDeep) {
            try parse(String(repeating: "[", count: depth + 1) + String(repeating: "]", count: depth + 1))
        }
    }
}
