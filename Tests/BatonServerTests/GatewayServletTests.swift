import BatonTestSupport
import Foundation
import Testing

/// Issue 43, finding 2: step-up holds for every spelling of a path that a servlet container
/// routes to the critical servlet. A real Tomcat (`ServletApplication`) behind each shipped
/// gateway running its files as shipped: a `;` path parameter (`/api/;x/transfer/send`) passed
/// the step-up locations of nginx, Caddy and HAProxy, and Traefik's, and Tomcat, which drops
/// path parameters, routed it to the transfer servlet with the identity headers; a double
/// encoding (`/api/%252e%252e/transfer`) reaches an app that decodes twice as a dot segment.
/// The rule decided once (docs/security.md, "Path spellings"): a path with a `;` or an encoded
/// `%` or `;` is refused with 400 before any route, like the other spellings not in normal
/// form, by every gateway and by `/v1/authz`.
@Suite(.enabled(if: ServletApplication.isAvailable, "needs Tomcat and a JDK (./scripts/test installs libtomcat10-embed-java and openjdk-17-jdk-headless)"))
struct GatewayServletTests {
    /// Spellings Tomcat routes to /api/transfer/* that are not /api/transfer/... as written.
    static let parameterSpellings = [
        "/api/;x/transfer/send", "/;x/api/transfer/1", "/api;x/transfer/1", "/api/orders/..;/transfer/1",
        "/api/;/transfer/1", "/api/transfer;jsessionid=1/send", "/api/transfer;x", "/api/orders;x/../transfer/1",
    ]
    /// Spellings that become another path when the application decodes them a second time.
    static let doubleEncodings = ["/api/%252e%252e/transfer/1", "/api/orders/%252e%252e/transfer/1", "/api/%2574ransfer/1", "/api/%253b/transfer/1", "/api/%3b/transfer/1"]

    @Test(arguments: GatewayKind.available)
    func noRequestReachesTheCriticalServletWithoutStepUp(_ kind: GatewayKind) throws {
        let baton = try ServerProcess(["--trusted-proxy", "127.0.0.1/32", "--max-chains-per-user", "0"])
        try baton.addUser("alice")
        let tomcat = try ServletApplication()
        let gateway = try kind.start(batonPort: baton.port, appPort: tomcat.port)
        let login = try gateway.request("POST", "/v1/login", from: "127.0.0.5", token: nil, headers: [],
                                        json: #"{"username":"alice","password":"correct horse battery","device_id":"phone-1"}"#)
        let token = try #require(login.json["token"] as? String, "\(kind) login: \(login.status) \(login.text)")
        let chain = try #require(login.json["chain_id"] as? String)
        try baton.ageAuthentication(ofChain: chain, by: 301)

        // Tomcat's own routing, for the record: the written path and the servlet differ.
        let direct = try HTTPConnection(port: tomcat.port)
        defer { direct.close() }
        #expect(try direct.request("GET", "/api/;x/transfer/send").json["servlet"] as? String == "transfer")

        for path in Self.parameterSpellings + Self.doubleEncodings {
            let response = try gateway.request("GET", path, from: "127.0.0.5", token: token, headers: [], json: nil)
            let what = "\(kind) \(path): \(response.status) \(response.text)"
            #expect(response.json["servlet"] == nil, "reached a servlet: \(what)")
            if kind == .traefik {
                // Traefik refuses encoded characters itself (400, its own body), cleans dot
                // segments before routing (`/api/orders;x/../transfer/1` is challenged as
                // /api/transfer/1, the path the servlet then gets), and sends a `;` that is
                // left to Baton's 400.
                #expect(response.status == 400 || response.status == 401 && response.error == "insufficient_user_authentication", "\(what)")
            } else {
                #expect(response.status == 400 && response.error == "invalid_request", "\(what)")
            }
        }
        // The written paths: the critical one is challenged, the others reach the app servlet.
        let challenged = try gateway.request("GET", "/api/transfer/42", from: "127.0.0.5", token: token, headers: [], json: nil)
        #expect(challenged.status == 401 && challenged.error == "insufficient_user_authentication", "\(kind): \(challenged.text)")
        let orders = try gateway.request("GET", "/api/orders?x=a;b%25", from: "127.0.0.5", token: token, headers: [], json: nil)
        #expect(orders.status == 200 && orders.json["servlet"] as? String == "app", "\(kind): \(orders.text)")
        // Confirmed, the transfer servlet gets the request with the identity and the auth time.
        let confirmed = try gateway.request("POST", "/v1/confirm", from: "127.0.0.5", token: token, headers: [],
                                            json: #"{"password":"correct horse battery"}"#)
        #expect(confirmed.status == 200, "\(kind): \(confirmed.text)")
        let transfer = try gateway.request("GET", "/api/transfer/42", from: "127.0.0.5", token: token, headers: [], json: nil)
        #expect(transfer.status == 200 && transfer.json["servlet"] as? String == "transfer" && transfer.json["x-baton-auth-time"] is String,
                "\(kind): \(transfer.text)")
    }
}
