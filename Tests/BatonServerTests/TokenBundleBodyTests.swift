@testable import BatonAPI
import BatonCore
import BatonStorage
import BatonTestSupport
import Foundation
import Testing

/// Login's and exchange's answer, written byte by byte, is exactly what the generic JSON
/// writer made of the same bundle before (same keys, order, numbers, times and escaping).
struct TokenBundleBodyTests {
    /// The generic writer's text for `bundle` (what `bundleBody` replaced).
    private func generic(_ bundle: TokenBundle) -> String {
        JSONValue.object([
            "token": .string(bundle.token), "token_type": .string(bundle.isBound ? "DPoP" : "Bearer"), "expires_in": .int(bundle.expiresIn),
            "expires_at": .string(bundle.expiresAt.rfc3339), "exchange_until": .string(bundle.exchangeUntil.rfc3339),
            "chain_id": .string(bundle.chainID.description), "generation": .int(Int64(bundle.generation)),
        ]).text
    }

    @Test func bundlesAreWrittenAsTheGenericWriterWroteThem() throws {
        var random = SeededRandom(seed: 30)
        let tokens = ["bt1_dDL1ao1j_RYAAAAA18Dje_PQNc4LyY-Uxr9fC6RKYF-aSR__CGniNmB1qWbWBFKfP5C06r64rOrd6nz3", "",
                      "a\"b\\c\u{01}\u{2028}é"]  // never issued; proves the token is escaped as any string
        for index in 0..<500 {
            let issued = Instant(milliseconds: Int64.random(in: 0...4_102_444_800_000, using: &random))
            let bundle = TokenBundle(
                token: index < tokens.count ? tokens[index] : "bt1_" + String(index, radix: 36),
                chainID: ChainID(rawValue: Int64.random(in: Int64.min...Int64.max, using: &random)),
                generation: index == 3 ? Int.max : Int.random(in: 0...1_000_000, using: &random),
                expiresAt: issued + .seconds(900), exchangeUntil: issued + .seconds(Int64.random(in: 0...2_592_000, using: &random)),
                expiresIn: index == 4 ? 0 : 900, isBound: index.isMultiple(of: 2))
            let body = API.bundleBody(bundle)
            #expect(String(decoding: body, as: UTF8.self) == generic(bundle))
            let parsed = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
            #expect(parsed["token"] as? String == bundle.token)
            #expect(parsed["token_type"] as? String == (bundle.isBound ? "DPoP" : "Bearer"))
        }
    }
}
