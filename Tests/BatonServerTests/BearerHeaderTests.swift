@testable import BatonAPI
import Testing

/// The byte-level reading of the usual `Authorization: Bearer <token>` and `Authorization:
/// DPoP <token>` headers agrees with the character-level one it short-cuts, and declines
/// every header of another shape.
struct BearerHeaderTests {
    /// The character-level reading (what `credential` falls back to): the scheme and token,
    /// or nil for no token, or an empty token standing for token_invalid.
    private func characterLevel(_ header: String) -> (token: String, isDPoP: Bool)? {
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count >= 1, ["bearer", "dpop"].contains(parts[0].lowercased()) else { return nil }
        let isDPoP = parts[0].lowercased() == "dpop"
        guard parts.count == 2 else { return ("", isDPoP) }
        return (String(parts[1].trimmingSpaces), isDPoP)
    }

    @Test(arguments: [
        "Bearer bt1_abcDEF-_0123", "bearer x", "BEARER x", "bEaReR token~!", "Bearer a",
        "DPoP bt1_abcDEF-_0123", "dpop x", "DPOP x", "dPoP token~!", "DPoP a",
    ])
    func plainHeadersGiveTheSameToken(_ header: String) throws {
        let credential = try #require(API.plainCredential(header))
        let expected = try #require(characterLevel(header))
        #expect(credential.token == expected.token)
        #expect(credential.isDPoP == expected.isDPoP)
    }

    @Test(arguments: [
        "Bearer", "Bearer ", "Bearer  x", "Bearer x y", "Bearer\tx", "Basic abc", "Bearerx abc", "Bearer caf\u{E9}",
        " Bearer x", "Bearer x\t", "Bearer \u{301}x", "Beare x", "", "Bearer x\u{7F}",
        "DPoP", "DPoP ", "DPoP  x", "DPoP x y", "DPoP\tx", "DPoPx abc", "DPo x", "DPoP caf\u{E9}", " DPoP x", "DPoP x\t",
        "D\u{130}PoP x", "DPoP\u{0} x", "dpo\u{50} x y",
    ])
    func otherShapesAreLeftToTheCharacterLevelReading(_ header: String) {
        #expect(API.plainCredential(header) == nil)
    }
}
