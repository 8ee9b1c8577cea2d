import BatonCore
import BatonDPoP
@testable import BatonStore
import Foundation
import Testing

/// The shipped gateways in front of a bound chain (issue 19, RFC 9449). Behind nginx's
/// `auth_request`, Caddy's `forward_auth`, Traefik's `forwardAuth` and HAProxy's Lua action,
/// verify is a request of its own (`GET /v1/verify`), but the proof the client sent names the
/// client's request: the gateway passes the `DPoP` header unchanged with the original method
/// and URI (`X-Original-Method`, `X-Original-URI`; Traefik's `X-Forwarded-Method`,
/// `X-Forwarded-Uri`) and the public scheme and host (`X-Forwarded-Proto`,
/// `X-Forwarded-Host`), and hands Baton's DPoP challenge (with `DPoP-Nonce`) back to the client.
@Suite(.serialized)
struct GatewayDPoPTests {
    /// The gateways this machine has.
    static let gateways = GatewayKind.available

    @Test(arguments: gateways)
    func aProofForTheOriginalRequestReachesTheApplication(_ kind: GatewayKind) throws {
        let bed = try BoundGateway(kind)
        let token = try bed.login()
        for (method, path) in [("GET", "/api/orders?page=2"), ("POST", "/api/orders"), ("DELETE", "/api/orders/7"), ("GET", "/api/transfer/42")] {
            let response = try bed.send(method, path, token: token, proof: bed.proof(method, path, token: token))
            #expect(response.status == 200, "\(kind) \(method) \(path): \(response.status) \(response.text)")
            let echo = response.json
            #expect(echo["path"] as? String == path && echo["x-baton-username"] as? String == "alice", "\(kind) \(path): \(echo)")
            // The app gets the identity, neither the token nor its proof.
            #expect(echo["authorization"] == nil && echo["dpop"] == nil, "\(kind) \(path): \(echo)")
        }
        // Baton's own locations pass the proof on unchanged: a bound exchange through the gateway.
        let exchanged = try bed.send("POST", "/v1/exchange", token: token, proof: bed.proof("POST", "/v1/exchange", token: token))
        #expect(exchanged.status == 200 && exchanged.json["token_type"] as? String == "DPoP", "\(kind): \(exchanged.text)")
        let next = try #require(exchanged.json["token"] as? String)
        #expect(try bed.send("GET", "/api/orders", token: next, proof: bed.proof("GET", "/api/orders", token: next)).status == 200)
    }

    @Test(arguments: gateways)
    func aThiefWithTheTokenButNotTheKeyGetsTheDPoPChallenge(_ kind: GatewayKind) throws {
        let bed = try BoundGateway(kind)
        let token = try bed.login()
        let thief = ProofSigner(.es256(.generate()))
        let attempts: [(String, HTTPConnection.Response)] = [
            ("Bearer, no proof", try bed.gateway.request("GET", "/api/orders", from: "127.0.0.6", token: token, headers: [], json: nil)),
            ("DPoP, no proof", try bed.send("GET", "/api/orders", token: token, proof: nil)),
            ("a proof for another URL", try bed.send("GET", "/api/orders", token: token, proof: bed.proof("GET", "/api/other", token: token))),
            ("a proof for another method", try bed.send("GET", "/api/orders", token: token, proof: bed.proof("POST", "/api/orders", token: token))),
            ("a proof for verify's own request", try bed.send("GET", "/api/orders", token: token, proof: bed.proof("GET", "/v1/verify", token: token))),
            ("a proof for another host", try bed.send("GET", "/api/orders", token: token,
                                                      proof: bed.proof("GET", "/api/orders", token: token, base: "http://evil.example"))),
            ("another key's proof", try bed.send("GET", "/api/orders", token: token, proof: bed.proof("GET", "/api/orders", token: token, by: thief))),
            ("another key's proof, critical", try bed.send("GET", "/api/transfer/42", token: token,
                                                           proof: bed.proof("GET", "/api/transfer/42", token: token, by: thief))),
        ]
        for (what, response) in attempts {
            expectDPoPRefusal(response, "\(kind), \(what)")
        }
        // A proof seen once does not pass twice (a captured request replayed).
        let proof = bed.proof("GET", "/api/orders", token: token)
        #expect(try bed.send("GET", "/api/orders", token: token, proof: proof).status == 200)
        expectDPoPRefusal(try bed.send("GET", "/api/orders", token: token, proof: proof), "\(kind), a replayed proof")
        // Nothing changed: the victim's next request passes, and each refusal is audited.
        #expect(try bed.send("GET", "/api/orders", token: token, proof: bed.proof("GET", "/api/orders", token: token)).status == 200)
        #expect(try eventually { try bed.auditCount("proof_failed") == attempts.count + 1 })  // written off the request path
        #expect(try bed.auditCount("chain_revoked") == 0)
    }

    @Test(arguments: gateways)
    func aSpoofedOriginalRequestDoesNotChangeWhatIsChecked(_ kind: GatewayKind) throws {
        let bed = try BoundGateway(kind)
        let token = try bed.login()
        let spoofed = [("X-Original-Method", "POST"), ("X-Original-URI", "/api/other"), ("X-Forwarded-Method", "POST"),
                       ("X-Forwarded-Uri", "/api/other"), ("X-Forwarded-Host", "evil.example"), ("X-Forwarded-Proto", "https")]
        // The proof for the request made passes whatever the client claims ...
        let made = try bed.send("GET", "/api/orders", token: token, proof: bed.proof("GET", "/api/orders", token: token), headers: spoofed)
        #expect(made.status == 200, "\(kind): \(made.text)")
        // ... and a proof for the request claimed does not.
        let claimed = [bed.proof("POST", "/api/other", token: token), bed.proof("POST", "/api/other", token: token, base: "https://evil.example")]
        for proof in claimed {
            expectDPoPRefusal(try bed.send("GET", "/api/orders", token: token, proof: proof, headers: spoofed), "\(kind), spoofed")
        }
        // The same through Baton's own location: verify called directly checks its own request.
        expectDPoPRefusal(try bed.send("GET", "/v1/verify", token: token, proof: bed.proof("POST", "/api/other", token: token), headers: spoofed),
                          "\(kind), spoofed at /v1/verify")
        #expect(try bed.send("GET", "/v1/verify", token: token, proof: bed.proof("GET", "/v1/verify", token: token), headers: spoofed).status == 200)
    }

    @Test(arguments: gateways)
    func aProofWithAClockFarOffGetsTheNonceAndPassesWithIt(_ kind: GatewayKind) throws {
        let bed = try BoundGateway(kind)
        let token = try bed.login()
        let skewed = SystemClock().now() - .seconds(3600)  // a phone whose clock is an hour late
        for path in ["/api/orders", "/api/transfer/42"] {
            let challenged = try bed.send("GET", path, token: token, proof: bed.proof("GET", path, token: token, at: skewed))
            #expect(challenged.status == 401 && challenged.error == "use_dpop_nonce", "\(kind) \(path): \(challenged.status) \(challenged.text)")
            let challenge = challenged.headers["www-authenticate"] ?? ""
            #expect(challenge.hasPrefix("DPoP ") && challenge.contains(#"error="use_dpop_nonce""#), "\(kind) \(path): \(challenge)")
            let nonce = try #require(challenged.headers["dpop-nonce"], "\(kind) \(path): no DPoP-Nonce in \(challenged.headers)")
            #expect(nonce.count == 43, "\(kind) \(path): \(nonce)")
            // The same clock with the nonce: fresh.
            let retried = try bed.send("GET", path, token: token, proof: bed.proof("GET", path, token: token, nonce: nonce, at: skewed))
            #expect(retried.status == 200, "\(kind) \(path): \(retried.status) \(retried.text)")
        }
    }

    @Test(arguments: gateways)
    func withAPublicURLTheProofNamesItWhateverTheGatewaySays(_ kind: GatewayKind) throws {
        // --public-url outranks the forwarding headers (docs/deploy.md, "The public URL").
        let bed = try BoundGateway(kind, publicURL: "https://auth.example.org")
        let token = try bed.login()
        let response = try bed.send("GET", "/api/orders", token: token, proof: bed.proof("GET", "/api/orders", token: token))
        #expect(response.status == 200, "\(kind): \(response.status) \(response.text)")
        expectDPoPRefusal(try bed.send("GET", "/api/orders", token: token, proof: bed.proof("GET", "/api/orders", token: token, base: "http://127.0.0.1")),
                          "\(kind), the gateway's URL instead of the public one")
    }

    @Test(arguments: gateways)
    func twoProofsInOneRequestAreRefused(_ kind: GatewayKind) throws {
        // RFC 9449 §4.3 (1): exactly one DPoP header. The gateway must not pick one of them.
        let bed = try BoundGateway(kind)
        let token = try bed.login()
        let proofs = [("DPoP", bed.proof("GET", "/api/orders", token: token)), ("DPoP", bed.proof("GET", "/api/orders", token: token))]
        expectDPoPRefusal(try bed.gateway.request("GET", "/api/orders", from: "127.0.0.5", token: nil,
                                                  headers: [("Authorization", "DPoP " + token)] + proofs, json: nil), "\(kind), two proofs")
    }

    /// Baton's refusal of a bound token's proof, as the client must see it through the gateway.
    func expectDPoPRefusal(_ response: HTTPConnection.Response, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == 401 && response.error == "invalid_dpop_proof", "\(what): \(response.status) \(response.text)", sourceLocation: sourceLocation)
        let challenge = response.headers["www-authenticate"] ?? ""
        #expect(challenge.hasPrefix("DPoP ") && challenge.contains(#"error="invalid_dpop_proof""#), "\(what): \(challenge)", sourceLocation: sourceLocation)
        #expect(response.headers["content-type"] == "application/json", "\(what)", sourceLocation: sourceLocation)
    }
}


/// Baton (DPoP optional, the default), the echo application, and a gateway running the shipped
/// files in front of both; the device's key, and a chain bound to it.
final class BoundGateway {
    let baton: ServerProcess
    let app: EchoApplication
    let gateway: any GatewayProcess
    let device = ProofSigner(.es256(.generate()))
    /// The public origin of the test's requests as Baton sees it: `--public-url` when given,
    /// else what the gateway tells it, the scheme it was reached by (`X-Forwarded-Proto:
    /// http`) and the client's `Host` (`X-Forwarded-Host`; the test connection sends `Host:
    /// 127.0.0.1`).
    let base: String

    init(_ kind: GatewayKind, publicURL: String? = nil) throws {
        // The gateway connects from 127.0.0.1 (trusted); clients come from other loopback addresses.
        base = publicURL ?? "http://127.0.0.1"
        baton = try ServerProcess(["--trusted-proxy", "127.0.0.1/32", "--max-chains-per-user", "0"] + ServerProcess.eachRefusalAudited + (publicURL.map { ["--public-url", $0] } ?? []))
        try baton.addUser("alice")
        app = try EchoApplication()
        gateway = try kind.start(batonPort: baton.port, appPort: app.port)
    }

    /// A proof for `method` `path` (query dropped) on `base` (default: the public origin),
    /// presenting `token`.
    func proof(_ method: String, _ path: String, token: String? = nil, by signer: ProofSigner? = nil, base: String? = nil,
               nonce: String? = nil, at time: Instant = SystemClock().now()) -> String {
        (signer ?? device).proof(method: method, url: (base ?? self.base) + path, token: token, nonce: nonce, now: time)
    }

    /// Logs in through the gateway with a proof: the chain is bound to `device`.
    func login() throws -> String {
        let response = try gateway.request("POST", "/v1/login", from: "127.0.0.5", token: nil, headers: [("DPoP", proof("POST", "/v1/login"))],
                                           json: #"{"username":"alice","password":"correct horse battery","device_id":"phone-1"}"#)
        guard response.status == 200, response.json["token_type"] as? String == "DPoP", let token = response.json["token"] as? String else {
            throw ServerProcess.ServerError.didNotStart("bound login through the gateway: \(response.status) \(response.text)")
        }
        return token
    }

    /// `token` presented as a bound token (`Authorization: DPoP`) with `proof` (none: nil).
    func send(_ method: String, _ path: String, token: String, proof: String?, headers: [(String, String)] = []) throws -> HTTPConnection.Response {
        let presented = [("Authorization", "DPoP " + token)] + (proof.map { [("DPoP", $0)] } ?? [])
        return try gateway.request(method, path, from: "127.0.0.5", token: nil, headers: presented + headers, json: method == "POST" ? "{}" : nil)
    }

    /// Audit events of `kind`.
    func auditCount(_ kind: String) throws -> Int {
        let connection = try Connection(path: baton.databasePath)
        defer { connection.close() }
        return try connection.statement("SELECT count(*) FROM audit WHERE kind = ?").first([.text(kind)]) { Int($0.int(0)) } ?? -1
    }
}
