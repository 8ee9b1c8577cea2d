@testable import BatonPostgres
import BatonTestSupport
import Testing

/// `SQLText` answers what the standard library's `String.hasPrefix` and `String.contains`
/// (character by character) answer, for every text: bytes compared for ASCII, the `String`
/// methods for anything else. The reference here compares arrays of characters, since this
/// file also sees Foundation's `contains`, which answers otherwise for some texts that are
/// not ASCII (BatonPostgres does not import Foundation).
struct SQLTextTests {
    /// Pieces the texts are made of: the words looked for, parts of them, SQL around them,
    /// and characters that are not ASCII (a combining accent changes what a character is).
    private static let pieces = [
        "SET ", "INSERT ", "UPDATE ", "DELETE ", "SELECT ", "RETURNING", "chains", "users", "BEGIN",
        "S", "SE", "SEL", "INS", "RETURN", "ING", "chain", "user", "s", " ", "\n", "\r", "\r\n", "(", "$1", ",",
        "é", "\u{301}", "🙂", "\u{200D}", "e\u{301}", "Ｓ",
    ]
    private static let prefixes: [StaticString] = ["SET ", "INSERT ", "UPDATE ", "DELETE ", "SELECT "]
    private static let words: [StaticString] = ["RETURNING", "chains", "users"]

    private static func begins(_ text: String, with prefix: String) -> Bool {
        Array(text).starts(with: Array(prefix))
    }

    private static func occurs(_ word: String, in text: String) -> Bool {
        let characters = Array(text), wanted = Array(word)
        guard characters.count >= wanted.count else { return false }
        return (0...(characters.count - wanted.count)).contains { Array(characters[$0..<($0 + wanted.count)]) == wanted }
    }

    @Test func everyTextGetsTheAnswerOfTheStringMethods() {
        var random = SeededRandom(seed: 47)
        for _ in 0..<20_000 {
            let text = (0..<Int.random(in: 0...8, using: &random)).map { _ in Self.pieces.randomElement(using: &random)! }.joined()
            for prefix in Self.prefixes {
                #expect(SQLText.hasPrefix(text, prefix) == Self.begins(text, with: prefix.description), "\(text.debugDescription) \(prefix)")
            }
            for word in Self.words {
                #expect(SQLText.contains(text, word) == Self.occurs(word.description, in: text), "\(text.debugDescription) \(word)")
            }
        }
    }

    @Test func aCombiningMarkAfterTheWordIsPartOfItsLastCharacter() {
        // As characters, "SELECT " followed by a combining accent does not begin with "SELECT ".
        #expect(!SQLText.hasPrefix("SELECT \u{301}id FROM chains", "SELECT "))
        #expect(!SQLText.contains("UPDATE chains\u{301} SET x = 1", "chains"))
        #expect(SQLText.contains("UPDATE chains SET note = 'é'", "chains"))
        #expect(SQLText.hasPrefix("SELECT id FROM chains", "SELECT "))
        #expect(!SQLText.hasPrefix("SEL", "SELECT "))
        #expect(!SQLText.contains("", "users"))
    }
}
