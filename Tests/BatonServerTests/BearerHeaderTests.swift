@testable import BatonAPI
import Testing

/// The byte-level reading of the usual `Authorization: Bearer <token>` header agrees with the
/// character-level one it short-cuts, and declines every header of another shape.
struct BearerHeaderTests {
    /// The character-level reading (what `bearerToken` falls back to): the token, or nil for
    /// no bearer token, or "" standing for token_invalid.
    private func characterLevel(_ header: String) -> String? {
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count >= 1, parts[0].lowercased() == "bearer" else { return nil }
        guard parts.count == 2 else { return "" }
        return String(parts[1].trimmingSpaces)
    }

    @Test(arguments: [
        "Bearer bt1_abcDEF-_0123", "bearer x", "BEARER x", "bEaReR token~!", "Bearer a",
    ])
    func plainHeadersGiveTheSameToken(_ header: String) {
        #expect(API.plainBearerToken(header) != nil)
        #expect(API.plainBearerToken(header) == characterLevel(header))
    }

    @Test(arguments: [
        "Bearer", "Bearer ", "Bearer  x", "Bearer x y", "Bearer\tx", "Basic abc", "Bearerx abc", "Bearer caf\u{E9}",
        " Bearer x", "Bearer x\t", "Bearer \u{301}x", "Beare x", "", "Bearer x\u{7F}",
    ])
    func otherShapesAreLeftToTheCharacterLevelReading(_ header: String) {
        #expect(API.plainBearerToken(header) == nil)
    }
}
