@_spi(Simulation) @testable import BatonClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// Redirects of bound (DPoP) requests (issue 29, M8): the proof never crosses origins, and a
/// redirect within the origin carries a fresh proof for its own URL.
struct RedirectGuardTests {
    static let origin = Origin(URL(string: "https://api.example.com")!)

    static func boundRequest(to url: String) throws -> (URLRequest, DeviceKey) {
        let key = try DeviceKey.generateSoftware().key
        var request = URLRequest(url: URL(string: url)!)
        request.setValue("DPoP bt1_token", forHTTPHeaderField: "Authorization")
        request.setValue("phone-1", forHTTPHeaderField: "X-Device-Id")
        request.setValue(try DeviceProof.make(key: key, method: "GET", url: URL(string: "https://api.example.com/a")!,
                                              token: "bt1_token", nonce: nil, now: Date()), forHTTPHeaderField: "DPoP")
        return (request, key)
    }

    /// The claims of a proof (its JWS payload).
    static func claims(_ proof: String) throws -> [String: Any] {
        let payload = try #require(proof.split(separator: ".").dropFirst().first.flatMap { Base64URL.decode(String($0)) })
        return try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
    }

    @Test func aRedirectToAnotherOriginCarriesNoTokenProofOrDeviceID() throws {
        let (request, key) = try Self.boundRequest(to: "https://cdn.example.net/file")
        let transport = HTTPTransport(configuration: BatonConfiguration(baseURL: URL(string: "https://api.example.com")!))
        let redirected = transport.redirected(request, proofKey: key)
        for name in ["Authorization", "DPoP", "X-Device-Id"] { #expect(redirected.value(forHTTPHeaderField: name) == nil, "\(name)") }
    }

    @Test func aRedirectWithinTheOriginGetsAFreshProofForItsOwnURL() throws {
        let (request, key) = try Self.boundRequest(to: "https://api.example.com/b?page=2")
        let original = try #require(request.value(forHTTPHeaderField: "DPoP"))
        let redirected = RedirectGuard.redirected(request, within: Self.origin) { redirect in
            try? DeviceProof.make(key: key, method: redirect.httpMethod ?? "GET", url: redirect.url!, token: "bt1_token", nonce: nil, now: Date())
        }
        let proof = try #require(redirected.value(forHTTPHeaderField: "DPoP"))
        #expect(proof != original)
        #expect(try Self.claims(proof)["htu"] as? String == "https://api.example.com/b")
        #expect(try Self.claims(proof)["htm"] as? String == "GET")
        #expect(redirected.value(forHTTPHeaderField: "Authorization") == "DPoP bt1_token")
    }

    /// No way to prove the redirect (the key cannot sign): it goes out without the token.
    @Test func aBoundRedirectThatCannotBeProvedCarriesNoToken() throws {
        let (request, _) = try Self.boundRequest(to: "https://api.example.com/b")
        let redirected = RedirectGuard.redirected(request, within: Self.origin) { _ in nil }
        #expect(redirected.value(forHTTPHeaderField: "Authorization") == nil)
        #expect(redirected.value(forHTTPHeaderField: "DPoP") == nil)
    }
}
