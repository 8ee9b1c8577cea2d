@testable import BatonStore
import Foundation
import Testing

/// A client that sends the headers the gateway sets (who it is, where it came from, how recently
/// it authenticated) through the shipped nginx rules: neither the application nor Baton's audit
/// may see them.
@Suite(.serialized)
struct NginxSpoofingTests {
    let baton: ServerProcess
    let app: EchoApplication
    let nginx: NginxProcess

    init() throws {
        // nginx connects from 127.0.0.1; the client comes from 127.0.0.5.
        baton = try ServerProcess(["--trusted-proxy", "127.0.0.1/32", "--max-chains-per-user", "0"])
        try baton.addUser("alice")
        app = try EchoApplication()
        nginx = try NginxProcess(batonPort: baton.port, appPort: app.port)
    }

    /// What a client forges: every forwarding header, Baton's identity and step-up headers, and
    /// the original request a DPoP proof is checked against.
    static let spoofed: [(String, String)] = [
        ("X-Forwarded-For", "198.51.100.9"), ("X-Real-IP", "198.51.100.10"), ("X-Forwarded-Proto", "https"),
        ("X-Forwarded-Host", "evil.example"), ("X-Forwarded-Port", "8443"), ("Forwarded", "for=198.51.100.11;proto=https"),
        ("X-Baton-User-Id", "999"), ("X-Baton-Username", "mallory"), ("X-Baton-Chain-Id", "00000000000000ff"),
        ("X-Baton-Auth-Time", "9999999999"), ("X-Baton-Error", "{}"), ("Connection", "close"),
        ("X-Original-Method", "PUT"), ("X-Original-URI", "/api/other"),
        // Names Baton does not set (yet): the gateway clears every X-Baton-*, not a list.
        ("X-Baton-Anything", "forged"), ("X-Baton-Role", "admin"), ("x-baton-user-id-2", "999"),
    ]

    func login() throws -> (token: String, chain: String) {
        let response = try nginx.request("POST", "/v1/login", from: "127.0.0.5",
                                         json: #"{"username":"alice","password":"correct horse battery","device_id":"phone-1"}"#)
        #expect(response.status == 200, "\(response.text)")
        return (response.json["token"] as! String, response.json["chain_id"] as! String)
    }

    /// The headers the application must see for a request from 127.0.0.5 through nginx:
    /// nginx's forwarding headers, never the client's, and only the identity Baton vouched for.
    func expectGatewayHeadersOnly(_ echo: [String: Any], chain: String, authTime: Bool, _ path: String) {
        #expect(echo["x-forwarded-for"] as? String == "127.0.0.5", "\(path): \(echo)")
        #expect(echo["x-real-ip"] as? String == "127.0.0.5", "\(path): \(echo)")
        #expect(echo["x-forwarded-proto"] as? String == "http", "\(path): \(echo)")
        #expect(echo["x-forwarded-host"] as? String == "127.0.0.1", "\(path): \(echo)")
        #expect(echo["x-forwarded-port"] == nil && echo["forwarded"] == nil, "\(path): \(echo)")
        #expect(echo["host"] as? String == "127.0.0.1", "\(path): \(echo)")  // the client's Host, not the upstream's name
        #expect(echo["connection"] == nil, "\(path): \(echo)")  // HTTP/1.1 keep-alive to the app
        #expect(echo["x-baton-user-id"] as? String == "1" && echo["x-baton-username"] as? String == "alice", "\(path): \(echo)")
        #expect(echo["x-baton-chain-id"] as? String == chain && echo["x-baton-error"] == nil, "\(path): \(echo)")
        if authTime {
            #expect(Int64(echo["x-baton-auth-time"] as? String ?? "").map { $0 < 9_999_999_999 } == true, "\(path): \(echo)")
        } else {
            #expect(echo["x-baton-auth-time"] == nil, "\(path): \(echo)")
        }
        #expect(echo["authorization"] == nil && echo["dpop"] == nil, "\(path): \(echo)")
        #expect(echo["x-baton-anything"] == nil && echo["x-baton-role"] == nil && echo["x-baton-user-id-2"] == nil, "\(path): \(echo)")
        // nginx sets X-Original-* on every request from its own values (verify needs them).
        #expect(echo["x-original-method"] as? String == "GET" && echo["x-original-uri"] as? String == path, "\(path): \(echo)")
    }

    @Test func spoofedForwardingAndIdentityHeadersNeverReachTheApplication() throws {
        let (token, chain) = try login()
        let orders = try nginx.request("GET", "/api/orders", from: "127.0.0.5", token: token, headers: Self.spoofed)
        #expect(orders.status == 200, "\(orders.text)")
        expectGatewayHeadersOnly(orders.json, chain: chain, authTime: false, "/api/orders")
        let transfer = try nginx.request("GET", "/api/transfer/42", from: "127.0.0.5", token: token, headers: Self.spoofed)
        #expect(transfer.status == 200, "\(transfer.text)")
        expectGatewayHeadersOnly(transfer.json, chain: chain, authTime: true, "/api/transfer/42")
    }

    @Test func spoofedForwardedForThroughApiLocationIsNotAudited() throws {
        // A lost-response retry leaves a replaced sibling; presenting it at the gateway revokes
        // the chain (fork_detected), audited with the address of whoever presented it.
        let (first, _) = try login()
        let phone = [("X-Device-Id", "phone-1")]
        let lost = try nginx.request("POST", "/v1/exchange", from: "127.0.0.5", token: first, headers: phone)
        #expect(try nginx.request("POST", "/v1/exchange", from: "127.0.0.5", token: first, headers: phone).status == 200)
        let stolen = try #require(lost.json["token"] as? String)
        let fork = try nginx.request("GET", "/api/orders", from: "127.0.0.6", token: stolen, headers: Self.spoofed)
        #expect(fork.status == 401 && fork.error == "chain_revoked" && fork.json["reason"] as? String == "fork_detected", "\(fork.text)")
        let connection = try Connection(path: baton.databasePath)
        defer { connection.close() }
        let ips = try connection.statement("SELECT ip FROM audit WHERE kind IN ('fork_detected', 'chain_revoked') ORDER BY id").all { $0.text(0) }
        #expect(ips == ["127.0.0.6", "127.0.0.6"])
    }

    @Test func spoofedHeadersDoNotReachBatonThroughItsOwnLocations() throws {
        let (first, _) = try login()
        // Every /v1 location: the audit records the address nginx saw.
        let exchanged = try nginx.request("POST", "/v1/exchange", from: "127.0.0.7", token: first, headers: Self.spoofed)
        #expect(exchanged.status == 200, "\(exchanged.text)")
        let second = try #require(exchanged.json["token"] as? String)
        #expect(try nginx.request("POST", "/v1/logout", from: "127.0.0.8", token: second, headers: Self.spoofed).status == 204)
        let connection = try Connection(path: baton.databasePath)
        defer { connection.close() }
        let ips = try connection.statement("SELECT kind, ip FROM audit WHERE kind IN ('exchanged', 'chain_revoked') ORDER BY id").all { "\($0.text(0)) \($0.text(1))" }
        #expect(ips == ["exchanged 127.0.0.7", "chain_revoked 127.0.0.8"])  // the logout
    }
}
