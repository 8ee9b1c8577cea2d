@testable import BatonAPI
import BatonCore
import Foundation
import Testing

/// The pure parts of issue 31's endpoints, table by table: the original path of an Envoy check,
/// the step-up rules, the form body and HTTP Basic client credentials.
struct AuthzRulesTests {
    @Test(arguments: [
        ("/v1/authz/api/orders", "/api/orders"), ("/v1/authz/api/orders?page=2", "/api/orders?page=2"),
        ("/v1/authz/", "/"), ("/v1/authz/api/orders?next=/../%2e", "/api/orders?next=/../%2e"),
        ("/v1/authz/api/v1.2/x", "/api/v1.2/x"), ("/v1/authz/api/..x/.y", "/api/..x/.y"),
    ])
    func theOriginalTargetFollowsThePrefix(_ target: String, _ original: String) throws {
        #expect(try AuthzTarget.original(of: target) == original)
    }

    @Test(arguments: ["/v1/authz", "/v1/authz?x=1", "/v1/authzx/api", "/v1/authz/..", "/v1/authz/../login", "/v1/authz/api/./x",
                      "/v1/authz/api/.", "/v1/authz/api/..;/x", "/v1/authz/api/.;x", "/v1/authz//api", "/v1/authz/api//x",
                      "/v1/authz/api\\x", "/v1/authz/%2e%2e/x", "/v1/authz/api/%2E", "/v1/authz/a%2Fb", "/v1/authz/a%2fb",
                      "/v1/authz/a%5Cb", "/v1/authz/a%00", "/v1/authz/a\u{7F}", "/v1/authz/caf\u{E9}", "/v1/authz/a b",
                      "/v1/authz/api/..?x"])
    func anUnnormalizedOriginalPathIsRefused(_ target: String) {
        #expect(throws: BatonError.self, "\(target)") { try AuthzTarget.original(of: target) }
    }

    @Test func stepUpRulesMatchThePathInAnySpelling() throws {
        let rule = try #require(StepUpPath("/api/transfer=300"))
        for path in ["/api/transfer", "/api/transfer/", "/api/transfer/7", "/API/TRANSFER", "/api/Transfer?x", "/api/transfer.json",
                     "/api/transfer;v=1", "/api/tr%61nsfer", "/api/tr%41nsfer/x", "/api%2Ftransfer"] {
            #expect(rule.matches(path), "\(path)")
        }
        for path in ["/api/transfers", "/api/orders", "/api", "/api/orders?to=/api/transfer", "/x/api/transfer"] {
            #expect(!rule.matches(path), "\(path)")
        }
        let tight = try #require(StepUpPath("/api/transfer/big=60"))
        #expect(StepUpPath.maxAge(for: "/api/transfer/big/1", in: [rule, tight]) == .seconds(60))
        #expect(StepUpPath.maxAge(for: "/api/transfer/small", in: [rule, tight]) == .seconds(300))
        #expect(StepUpPath.maxAge(for: "/api/orders", in: [rule, tight]) == nil)
        #expect(try #require(StepUpPath("/api/transfer/=0")).path == "/api/transfer")
        for bad in ["api/transfer=300", "/api/transfer", "/api/transfer=", "/api/transfer=-1", "/api/transfer=1e3", "/api/../x=1",
                    "/api/%61=1", "/api?x=1", "/api/transfer=2147483648", "/a b=1", "/api//x=1"] {
            #expect(StepUpPath(bad) == nil, "\(bad)")
        }
    }

    @Test func formBodiesAreDecodedStrictly() throws {
        let form = try FormBody(Array("token=bt1_a%2Bb%3D&token_type_hint=access_token&empty=&flag".utf8))
        #expect(form.value("token") == "bt1_a+b=" && form.value("token_type_hint") == "access_token")
        #expect(form.value("empty") == nil && form.value("flag") == nil && form.value("missing") == nil)
        #expect(try FormBody(Array("token=a+b".utf8)).value("token") == "a b")
        #expect(try FormBody([]).values.isEmpty)
        for bad in ["token=a&token=b", "token=%", "token=%4", "token=%zz", "token=%ff", "token=%C3%28"] {
            #expect(throws: BatonError.self, "\(bad)") { try FormBody(Array(bad.utf8)) }
        }
    }

    @Test func basicCredentialsAreParsedAsRFC6749Says() {
        func basic(_ text: String) -> String { "Basic " + Data(text.utf8).base64EncodedString() }
        func parsed(_ header: String) -> [String] {
            ClientAuthenticator.basicCredentials(header).map { [$0.id, $0.secret] } ?? []
        }
        #expect(parsed(basic("kong:s3cret")) == ["kong", "s3cret"])
        #expect(parsed(basic("a%3Ab:c%3Ad:e")) == ["a:b", "c:d:e"])
        #expect(parsed("basic " + Data("kong:x".utf8).base64EncodedString()) == ["kong", "x"])
        for bad in [nil, "Bearer abc", "Basic", "Basic !!!", basic("nocolon"), basic(":secret"), basic("id:"), basic("id:%zz")] {
            #expect(ClientAuthenticator.basicCredentials(bad).map { [$0.id, $0.secret] } == nil, "\(bad ?? "nil")")
        }
        let clients = ClientAuthenticator(clients: [IntrospectionClient(id: "kong", secret: Array("s3cret".utf8)),
                                                    IntrospectionClient(id: "tyk", secret: Array("other".utf8))])
        #expect(clients.authenticate(basic("kong:s3cret")) == "kong" && clients.authenticate(basic("tyk:other")) == "tyk")
        #expect(clients.authenticate(basic("kong:other")) == nil && clients.authenticate(basic("tyk:s3cret")) == nil)
        #expect(clients.authenticate(basic("stranger:s3cret")) == nil && ClientAuthenticator(clients: []).authenticate(basic("kong:s3cret")) == nil)
    }

    @Test func wrongClientSecretsAreThrottledPerAddressAndTheRightOneNeverIs() {
        func basic(_ text: String) -> String { "Basic " + Data(text.utf8).base64EncodedString() }
        let clients = ClientAuthenticator(clients: [IntrospectionClient(id: "kong", secret: Array("s3cret".utf8))])
        let now = Instant(milliseconds: 1_000_000)
        for _ in 0..<20 { #expect(clients.authenticate(basic("kong:guess"), ip: "192.0.2.1", now: now) == .refused) }
        // That address's wrong secrets are blocked now; its right one is not.
        #expect(clients.authenticate(basic("kong:guess"), ip: "192.0.2.1", now: now) == .throttled(60))
        #expect(clients.authenticate(basic("kong:s3cret"), ip: "192.0.2.1", now: now) == .authenticated("kong"))
        // Failures spread over many addresses block no one: the id is not a secret.
        for address in 10..<110 { #expect(clients.authenticate(basic("kong:guess"), ip: "198.51.100.\(address % 100)", now: now) == .refused) }
        #expect(clients.authenticate(basic("kong:guess"), ip: "192.0.2.9", now: now) == .refused)
        #expect(clients.authenticate(basic("kong:s3cret"), ip: "192.0.2.9", now: now) == .authenticated("kong"))
        #expect(clients.authenticate(basic("kong:guess"), ip: "192.0.2.1", now: now + .seconds(61)) == .refused)
    }

    /// The throttle keeps address groups, never the presented id: 100 failures with a 12 KB id
    /// from 100 addresses leave keys of a few dozen bytes each.
    @Test func theThrottleKeepsNothingOfThePresentedIDsSize() {
        func basic(_ text: String) -> String { "Basic " + Data(text.utf8).base64EncodedString() }
        let clients = ClientAuthenticator(clients: [IntrospectionClient(id: "kong", secret: Array("s3cret".utf8))])
        let now = Instant(milliseconds: 1_000_000)
        let huge = String(repeating: "k", count: 12_000)
        for address in 0..<100 { #expect(clients.authenticate(basic("\(huge)-\(address):guess"), ip: "198.51.100.\(address)", now: now) == .refused) }
        #expect(clients.throttleKeyBytes < 100 * 64, "\(clients.throttleKeyBytes) bytes of keys")
    }
}
