import Foundation
import Testing

/// Issue 31: Baton's introspection, revocation and metadata as an independent OAuth client
/// library uses them: Authlib (PyPI, pinned in scripts/authlib-venv) runs scripts/oauth_interop.py
/// against a real `baton serve`, discovering the endpoints from the RFC 8414 metadata and
/// authenticating with `client_secret_basic` as it does by default.
@Suite(.enabled(if: authlibPython != nil, "needs Authlib from PyPI: ./scripts/authlib-venv (./scripts/test runs it)"))
struct AuthlibInteropTests {
    @Test func authlibIntrospectsAndRevokesThroughTheDiscoveredEndpoints() throws {
        let server = try OAuthEndpointTests.server()
        let bearer = try server.login()
        let device = Device()
        let bound = try server.boundLogin(device, deviceID: "phone-2")
        let input: [String: Any] = [
            "base": "http://127.0.0.1:\(server.port)", "client_id": OAuthEndpointTests.clientID, "client_secret": OAuthEndpointTests.secret,
            "bearer_token": bearer["token"] as! String, "bound_token": bound["token"] as! String,
        ]
        let text = String(decoding: try JSONSerialization.data(withJSONObject: input), as: UTF8.self)
        let output = try runCommand(authlibPython!, [repositoryRoot + "/scripts/oauth_interop.py", text])
        try #require(output.status == 0, "\(output.stderr)")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any], "\(output.stdout)")
        func step(_ name: String) -> (status: Int?, body: [String: Any]?, challenge: String?) {
            let step = result[name] as? [String: Any]
            return (step?["status"] as? Int, step?["body"] as? [String: Any], step?["www_authenticate"] as? String)
        }
        let metadata = result["metadata"] as? [String: Any]
        let base = input["base"] as! String
        #expect(metadata?["issuer"] as? String == base && metadata?["introspection_endpoint"] as? String == base + "/v1/introspect"
                && metadata?["revocation_endpoint"] as? String == base + "/v1/revoke", "\(result)")

        let active = step("bearer")
        #expect(active.status == 200 && active.body?["active"] as? Bool == true && active.body?["username"] as? String == "alice", "\(result)")
        #expect(active.body?["chain_id"] as? String == bearer["chain_id"] as? String)
        let boundAnswer = step("bound")
        #expect(boundAnswer.body?["token_type"] as? String == "DPoP", "\(result)")
        #expect((boundAnswer.body?["cnf"] as? [String: Any])?["jkt"] as? String == device.signer.thumbprint.text)
        #expect(step("forged").status == 200 && step("forged").body?.count == 1 && step("forged").body?["active"] as? Bool == false)
        for name in ["wrong_secret", "revoke_wrong_secret"] {
            #expect(step(name).status == 401 && step(name).body?["error"] as? String == "invalid_client" && step(name).challenge == #"Basic realm="baton""#,
                    "\(name): \(result)")
        }
        #expect(step("revoke").status == 200 && step("revoke_again").status == 200 && step("revoke_unknown").status == 200, "\(result)")
        #expect(step("after_revoke").body?["active"] as? Bool == false)
        #expect(try server.revocation(of: bearer["chain_id"] as! String) == "logout")
        #expect(try server.revocation(of: bound["chain_id"] as! String) == "live")
    }
}
