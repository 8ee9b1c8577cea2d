import BatonCore
import BatonDPoP
@_spi(Simulation) @testable import BatonClient
import BatonTestSupport
import Foundation
import Testing

/// The device key and the proofs the client makes with it, without a server: the proofs pass
/// the server's own `ProofChecker` and an independent JOSE implementation (joserfc), and the
/// Linux key file is private, made once, and shared by processes sharing the store.
@Suite(.ownThreads) struct DeviceKeyTests {
    let token = "bt1_client-proof-test-token"

    @Test func clientProofsPassTheServersChecker() throws {
        let key = try #require(try MemoryCredentialStore().deviceKey(creating: true))
        let url = URL(string: "https://auth.example/v1/exchange?ignored=1#fragment")!
        let proof = try DeviceProof.make(key: key, method: "POST", url: url, token: token, nonce: nil, now: Date())
        let checker = ProofChecker(policy: ProofPolicy())
        let now = SystemClock().now()
        let thumbprint = try checker.check(proof, method: "POST", url: "https://auth.example/v1/exchange",
                                           tokenHash: TokenHash(of: token), now: now)
        #expect(thumbprint.text == key.thumbprint)
        // The same proof is refused as a replay, for another method, and for another token.
        #expect(throws: ProofError.self) {
            try checker.check(proof, method: "POST", url: "https://auth.example/v1/exchange", tokenHash: TokenHash(of: token), now: now)
        }
        #expect(throws: ProofError.self) {
            try DPoPProof.verify(proof, method: "GET", url: "https://auth.example/v1/exchange", tokenHash: TokenHash(of: token),
                                 now: now, policy: ProofPolicy())
        }
        #expect(throws: ProofError.self) {
            try DPoPProof.verify(proof, method: "POST", url: "https://auth.example/v1/exchange", tokenHash: TokenHash(of: "bt1_other"),
                                 now: now, policy: ProofPolicy())
        }
    }

    @Test func aLoginProofHasNoAthAndANonceProofPassesANonceOnlyPolicy() throws {
        let key = try #require(try MemoryCredentialStore().deviceKey(creating: true))
        let secret = [UInt8](repeating: 7, count: 32)
        let nonces = NonceSource(key: secret)
        let now = SystemClock().now()
        let nonce = nonces.nonce(at: now)
        // A clock two hours off: only the nonce makes the proof fresh.
        let proof = try DeviceProof.make(key: key, method: "POST", url: URL(string: "http://127.0.0.1:8080/v1/login")!, token: nil,
                                         nonce: nonce, now: Date().addingTimeInterval(-7200))
        var policy = ProofPolicy()
        policy.nonces = .whenClockIsOff(nonces)
        let thumbprint = try ProofChecker(policy: policy).check(proof, method: "POST", url: "http://127.0.0.1:8080/v1/login",
                                                               tokenHash: nil, now: now)
        #expect(thumbprint.text == key.thumbprint)
        let claims = try #require(Base64URL.decode(String(proof.split(separator: ".")[1])))
        #expect(!String(decoding: claims, as: UTF8.self).contains("ath"))
    }

    @Test(.enabled(if: josePython != nil, "needs joserfc from PyPI: ./scripts/jose-venv (./scripts/test runs it)"))
    func clientProofsVerifyWithJoserfc() throws {
        let key = try #require(try MemoryCredentialStore().deviceKey(creating: true))
        let url = "https://auth.example/v1/verify"
        let proof = try DeviceProof.make(key: key, method: "GET", url: URL(string: url + "?q=1")!, token: token, nonce: "n-1", now: Date())
        func verify(_ token: String) -> JSONValue {
            .object(["proof": .string(proof), "htm": .string("GET"), "htu": .string(url), "token": .string(token)])
        }
        let input = JSONValue.object(["cases": .array([verify(token), verify("bt1_other")])]).text
        let output = try runCommand(josePython!, [repositoryRoot + "/scripts/dpop_interop.py", "verify", input])
        try #require(output.status == 0, "dpop_interop.py failed: \(output.stderr)")
        let answers = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [[String: Any]])
        #expect(answers[0]["ok"] as? Bool == true, "\(answers[0])")
        #expect(answers[0]["jkt"] as? String == key.thumbprint, "joserfc's RFC 7638 thumbprint is the client's")
        #expect(answers[1]["ok"] as? Bool == false && answers[1]["error"] as? String == "ath")
    }

    @Test func theKeyFileIsPrivateMadeOnceAndKeptAcrossLoads() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = FileCredentialStore(path: directory + "/credentials.json")
        #expect(try store.deviceKey(creating: false) == nil, "no key before the first login")
        let made = try #require(try store.deviceKey(creating: true))
        let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/credentials.json.dpop-key")
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try store.deviceKey(creating: true)?.thumbprint == made.thumbprint, "made once")
        #expect(try FileCredentialStore(path: directory + "/credentials.json").deviceKey(creating: false)?.thumbprint == made.thumbprint)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["credentials.json.dpop-key"], "no temporary file left")
        // A damaged key file is an error, never a crash and never "no key"; only a login
        // (creating, under the store's lock) replaces it, so that the login is bound (issue 29, H3).
        try Data("{\"version\":1,\"d\":\"AAAA\"}".utf8).write(to: URL(fileURLWithPath: directory + "/credentials.json.dpop-key"))
        #expect(throws: BatonClientError.self) { try store.deviceKey(creating: false) }
        let replaced = try #require(try store.deviceKey(creating: true))
        #expect(replaced.thumbprint != made.thumbprint)
        #expect(try store.deviceKey(creating: false)?.thumbprint == replaced.thumbprint)
    }

    @Test func twoProcessesMakingTheKeyAtOnceShareOne() async throws {
        for round in 1...3 {
            let directory = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let storePath = directory + "/credentials.json"
            let probes = try (0..<2).map { _ in try Probe(arguments: ["--device-key", storePath]) }
            for probe in probes { #expect(try await probe.awaitReady(), "round \(round)") }
            for probe in probes { probe.go() }
            var thumbprints: [String] = []
            for probe in probes {
                let (status, output) = await probe.finish()
                #expect(status == 0, "round \(round): \(output)")
                thumbprints += output.split(separator: "\n").filter { $0.hasPrefix("key ") }.map { String($0.dropFirst(4)) }
            }
            let stored = try #require(try FileCredentialStore(path: storePath).deviceKey(creating: false))
            #expect(thumbprints == [stored.thumbprint, stored.thumbprint], "round \(round)")
        }
    }

    @Test func bundlesStoredBeforeBindingAreBearer() throws {
        let old = #"{"credentials":{"bundle":{"chainID":"c1","exchangeUntil":"","expiresAt":0,"generation":3,"lifetime":2,"serverExpiresAt":"","token":"bt1_x"},"deviceID":"d1"},"version":1}"#
        let credentials = try #require(StoredCredentials.decode(Data(old.utf8)))
        #expect(credentials.bundle?.tokenType == .bearer)
        #expect(credentials.bundle?.authorization == "Bearer bt1_x")
        var bound = try #require(credentials.bundle)
        bound.tokenType = .dpop
        let again = try #require(StoredCredentials.decode(try StoredCredentials(deviceID: "d1", bundle: bound).encoded()))
        #expect(again.bundle?.authorization == "DPoP bt1_x")
        let answer = #"{"token":"bt1_y","expires_in":2,"chain_id":"c1","generation":4,"token_type":"DPoP"}"#
        #expect(try TokenBundle.decode(Data(answer.utf8), receivedAt: Date()).tokenType == .dpop)
    }
}
