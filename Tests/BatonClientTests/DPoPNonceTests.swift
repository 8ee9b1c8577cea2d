import BatonCore
import BatonDPoP
@testable import BatonClient
import BatonTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// The session's side of binding against a scripted server (answers chosen per request, to
/// reach the nonce and key-loss paths without waiting for a clock to drift): the nonce retry,
/// the proof on every request, a refused proof that ends nothing, a lost key that does.
@Suite(.ownThreads) struct DPoPNonceTests {
    static let boundBundle = #"{"token":"bt1_bound","expires_in":3600,"chain_id":"c1","generation":0,"token_type":"DPoP"}"#

    /// A raw HTTP response.
    static func response(_ status: String, headers: [String] = [], body: String = "") -> String {
        (["HTTP/1.1 \(status)", "Content-Type: application/json", "Content-Length: \(body.utf8.count)", "Connection: close"] + headers)
            .joined(separator: "\r\n") + "\r\n\r\n" + body
    }

    /// The `DPoP` header of a raw request head, and its claims.
    static func proof(in head: String) throws -> (proof: String, claims: [String: Any]) {
        let line = try #require(head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("dpop:") }, "no DPoP header in \(head)")
        let proof = line.dropFirst("dpop:".count).trimmingCharacters(in: .whitespaces)
        let claims = try #require(Base64URL.decode(String(proof.split(separator: ".")[1])))
        return (proof, try #require(try JSONSerialization.jsonObject(with: Data(claims)) as? [String: Any]))
    }

    @Test func useDPoPNonceAtLoginAndOnARequestIsRetriedOnceWithTheNonce() async throws {
        let listener = try ScriptedListener { index, _ in
            switch index {
            case 0: Self.response("400 Bad Request", headers: ["DPoP-Nonce: nonce-1"],
                                  body: #"{"error":"use_dpop_nonce","error_description":"a nonce is required"}"#)
            case 1: Self.response("200 OK", body: Self.boundBundle)
            case 2: Self.response("401 Unauthorized", headers: ["DPoP-Nonce: nonce-2", "X-Baton-Refused: true",
                                  #"WWW-Authenticate: DPoP realm="baton", error="use_dpop_nonce", error_description="nonce", algs="ES256 EdDSA""#])
            default: Self.response("200 OK", headers: ["DPoP-Nonce: nonce-3"], body: "{}")
            }
        }
        defer { listener.stop() }
        let base = "http://127.0.0.1:\(listener.port)"
        let session = makeSession(URL(string: base)!)
        try await session.loginAlice()
        let status = try await session.send(URLRequest(url: URL(string: "/api/orders?page=2", relativeTo: URL(string: base))!)).1.statusCode
        #expect(status == 200)
        _ = try await session.send(URLRequest(url: URL(string: base + "/api/orders")!))

        let heads = listener.rawRequests
        #expect(heads.count == 5)
        let proofs = try heads.map(Self.proof(in:))
        #expect(proofs.map { $0.claims["nonce"] as? String } == [nil, "nonce-1", "nonce-1", "nonce-2", "nonce-3"])
        #expect(proofs.map { $0.claims["htm"] as? String } == ["POST", "POST", "GET", "GET", "GET"])
        #expect(proofs[2].claims["htu"] as? String == base + "/api/orders", "no query in htu")
        #expect(proofs[0].claims["ath"] == nil && proofs[1].claims["ath"] == nil, "a login presents no token")
        #expect(Set(proofs.map { $0.claims["jti"] as? String }).count == 5, "a fresh proof for every request")
        #expect(heads[2].contains("Authorization: DPoP bt1_bound"))
        // Each proof is one the server's checker accepts for its request, with ath for the token.
        let now = SystemClock().now()
        for (index, (proof, claims)) in proofs.enumerated() {
            let method = claims["htm"] as? String ?? ""
            let url = index < 2 ? base + "/v1/login" : base + "/api/orders"
            _ = try DPoPProof.verify(proof, method: method, url: url, tokenHash: index < 2 ? nil : TokenHash(of: "bt1_bound"),
                                     now: now, policy: ProofPolicy())
        }
        #expect(await session.heldBundle?.tokenType == .dpop)
        #expect(await session.heldBundle?.keyThumbprint != nil)
    }

    @Test func aRefusedProofEndsNothingWhileTheKeyIsThere() async throws {
        let listener = try ScriptedListener { index, _ in
            index == 0 ? Self.response("200 OK", body: Self.boundBundle)
                : Self.response("401 Unauthorized", headers: ["X-Baton-Refused: true", #"WWW-Authenticate: DPoP realm="baton", error="invalid_dpop_proof", error_description="key_mismatch""#],
                                body: #"{"error":"invalid_dpop_proof","error_description":"key_mismatch"}"#)
        }
        defer { listener.stop() }
        let store = MemoryCredentialStore()
        let session = makeSession(URL(string: "http://127.0.0.1:\(listener.port)")!, store: store)
        try await session.loginAlice()
        await #expect(throws: BatonClientError.self) { try await session.send(URLRequest(url: URL(string: "/api/orders")!)) }
        #expect(await session.status == .loggedIn(chainID: "c1", generation: 0))
        #expect(try store.load()?.bundle?.token == "bt1_bound")
    }

    @Test func aBoundChainWhoseKeyIsGoneAsksForALoginWithItsOwnReason() async throws {
        let listener = try ScriptedListener { _, _ in Self.response("200 OK", body: Self.boundBundle) }
        defer { listener.stop() }
        let store = MemoryCredentialStore()
        let base = URL(string: "http://127.0.0.1:\(listener.port)")!
        try await makeSession(base, store: store).loginAlice()
        store.forgetDeviceKey()  // the Keychain item or key file deleted, a backup restored elsewhere
        let session = makeSession(base, store: store)  // the next launch
        await #expect(throws: BatonClientError.loginRequired(.deviceKeyLost)) {
            try await session.send(URLRequest(url: URL(string: "/api/orders")!))
        }
        #expect(await session.status == .loggedOut(.deviceKeyLost))
        #expect(try store.load()?.bundle == nil)
        #expect(listener.rawRequests.count == 1, "nothing was sent without the key")
    }

    @Test func bindingOffLogsInWithoutAProof() async throws {
        let listener = try ScriptedListener { _, _ in
            Self.response("200 OK", body: #"{"token":"bt1_b","expires_in":3600,"chain_id":"c1","generation":0,"token_type":"Bearer"}"#)
        }
        defer { listener.stop() }
        var configuration = BatonConfiguration(baseURL: URL(string: "http://127.0.0.1:\(listener.port)")!)
        configuration.deviceBinding = .off
        let session = BatonSession(configuration: configuration, store: MemoryCredentialStore())
        try await session.login(username: "alice", password: "correct horse")
        _ = try await session.send(URLRequest(url: URL(string: "/api/orders")!))
        #expect(listener.rawRequests.allSatisfy { !$0.lowercased().contains("\r\ndpop:") })
        #expect(listener.rawRequests[1].contains("Authorization: Bearer bt1_b"))
    }
}
