@testable import BatonAPI
@testable import BatonCore
import Testing

/// The verify query parser alone: only max_age, digits only, bounded, once.
struct VerifyQueryTests {
    @Test(arguments: [
        ("/v1/verify", nil), ("/v1/verify?", nil), ("/v1/verify?max_age=0", 0), ("/v1/verify?max_age=300", 300),
        ("/v1/verify?max_age=0300", 300), ("/v1/verify?max_age=2147483647", 2_147_483_647),
    ] as [(String, Int64?)])
    func acceptedTargets(_ target: String, _ seconds: Int64?) throws {
        #expect(try VerifyQuery.maxAge(in: target) == seconds.map { .seconds($0) })
    }

    @Test(arguments: [
        "?max_age=", "?max_age", "?max_age=-0", "?max_age=+1", "?max_age=1e3", "?max_age=%31", "?max_age=12345678901",
        "?max_age=2147483648", "?max_age=1&max_age=1", "?&max_age=1", "?max_age=1&", "?=1", "?acr_values=x", "?Max_Age=1",
        "?max_age=1;x", "?max_age=\u{0661}",
    ])
    func refusedTargets(_ query: String) {
        #expect(throws: BatonError.self) { _ = try VerifyQuery.maxAge(in: "/v1/verify" + query) }
    }

    @Test func unknownParametersAreNamedAndLongNamesCut() {
        #expect(throws: BatonError.invalidArgument("Unknown query parameter 'acr_values'; the only parameter is max_age=SECONDS.")) {
            _ = try VerifyQuery.maxAge(in: "/v1/verify?acr_values=urn:mfa")
        }
        #expect(throws: BatonError.invalidArgument("Unknown query parameter '\(String(repeating: "a", count: 32))…'; the only parameter is max_age=SECONDS.")) {
            _ = try VerifyQuery.maxAge(in: "/v1/verify?" + String(repeating: "a", count: 100))
        }
    }
}
