import Foundation
import Testing

/// deploy/envoy/envoy.yaml and istio-authorization-policy.yaml, read as YAML (PyYAML, from
/// scripts/authlib-venv) and held to what a live `baton serve` answers: the headers the app may
/// receive are exactly the identity headers of a 200, the challenge headers reach the client,
/// the check carries the token, the proof and the scheme but no header that could move the
/// check, client-sent identity headers are removed before the check, and the token before the app.
@Suite(.enabled(if: authlibPython != nil, "needs PyYAML from PyPI: ./scripts/authlib-venv (./scripts/test runs it)"))
struct EnvoyConfigTests {
    /// The YAML documents of a shipped file, as JSON objects.
    static func documents(_ file: String) throws -> [[String: Any]] {
        let output = try runCommand(authlibPython!, ["-c", "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
                                                     repositoryRoot + "/deploy/envoy/" + file])
        try #require(output.status == 0, "\(output.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [[String: Any]])
    }

    /// The `exact` strings of a ListStringMatcher.
    static func exact(_ matcher: Any?) -> [String] {
        ((matcher as? [String: Any])?["patterns"] as? [[String: Any]] ?? []).compactMap { $0["exact"] as? String }
    }

    /// The names of the identity headers a live check answers with.
    static func liveIdentityHeaders() throws -> [String] {
        let server = try ServerProcess()
        try server.addUser("alice")
        let token = try server.login()["token"] as! String
        let answer = try EnvoyAuthzTests.check(server, "GET", "/api/orders", headers: [("authorization", "Bearer " + token)])
        return answer.headers.keys.filter { $0.hasPrefix("x-baton-") }.sorted()
    }

    @Test func theEnvoyFileAgreesWithTheCode() throws {
        let root = try #require(try Self.documents("envoy.yaml").first)
        let listener = try #require(((root["static_resources"] as? [String: Any])?["listeners"] as? [[String: Any]])?.first)
        let chain = try #require((listener["filter_chains"] as? [[String: Any]])?.first)
        let manager = try #require(((chain["filters"] as? [[String: Any]])?.first)?["typed_config"] as? [String: Any])
        #expect(manager["normalize_path"] as? Bool == true && manager["merge_slashes"] as? Bool == true && manager["use_remote_address"] as? Bool == true)
        #expect((manager["common_http_protocol_options"] as? [String: Any])?["headers_with_underscores_action"] as? String == "REJECT_REQUEST")
        let filters = try #require(manager["http_filters"] as? [[String: Any]])
        #expect(filters.map { $0["name"] as? String ?? "" } == ["envoy.filters.http.header_mutation", "envoy.filters.http.ext_authz", "envoy.filters.http.router"])
        let authz = try #require(filters[1]["typed_config"] as? [String: Any])
        let service = try #require(authz["http_service"] as? [String: Any])
        #expect(service["path_prefix"] as? String == "/v1/authz" && authz["failure_mode_allow"] as? Bool == false)
        let identity = try Self.liveIdentityHeaders()
        #expect(identity == ["x-baton-auth-time", "x-baton-chain-id", "x-baton-user-id", "x-baton-username"])
        let response = try #require(service["authorization_response"] as? [String: Any])
        #expect(Self.exact(response["allowed_upstream_headers"]).sorted() == identity)
        #expect(Set(Self.exact(response["allowed_client_headers"])).isSuperset(of: ["www-authenticate", "dpop-nonce", "x-baton-error", "content-type", "retry-after"]))
        let allowed = Self.exact(authz["allowed_headers"])
        #expect(Set(allowed).isSuperset(of: ["authorization", "dpop", "x-forwarded-proto", "x-forwarded-for"]))
        #expect(!allowed.contains { $0.hasPrefix("x-envoy-") || $0.hasPrefix("x-original-") || $0.hasPrefix("x-baton-") || $0 == "x-forwarded-host" })
        // Client-sent identity headers go before the check.
        let mutations = ((filters[0]["typed_config"] as? [String: Any])?["mutations"] as? [String: Any])?["request_mutations"] as? [[String: Any]] ?? []
        #expect(Set(identity).isSubset(of: Set(mutations.compactMap { $0["remove"] as? String })))
        // Issue 43's observations: what a client must not choose of what Baton reads from a
        // trusted proxy (the original request's host, method and URI), removed as the nginx,
        // Caddy, Traefik and HAProxy files remove or overwrite them.
        let forwarded = ["x-forwarded-host", "x-forwarded-method", "x-forwarded-uri", "x-original-method", "x-original-uri",
                         "x-original-url", "x-real-ip", "forwarded"]
        #expect(Set(forwarded).isSubset(of: Set(mutations.compactMap { $0["remove"] as? String })),
                "\(Set(forwarded).subtracting(mutations.compactMap { $0["remove"] as? String }))")
        // Routes: the surface of docs/deploy.md ("What the gateway exposes"), resolved as
        // Envoy does (the first route whose prefix or exact path matches): Baton's public
        // endpoints unchecked, the check and Baton's readiness and metrics 404, the rest to
        // the app behind the check, without the token.
        let routeConfig = try #require(manager["route_config"] as? [String: Any])
        let hosts = (routeConfig["virtual_hosts"] as? [[String: Any]]) ?? []
        let routes = (hosts.first?["routes"] as? [[String: Any]]) ?? []
        func route(for path: String) -> [String: Any]? {
            routes.first { route in
                let match = route["match"] as? [String: Any] ?? [:]
                if let exact = match["path"] as? String { return exact == path }
                return (match["prefix"] as? String).map(path.hasPrefix) ?? false
            }
        }
        func destination(_ path: String) -> String {
            guard let route = route(for: path) else { return "none" }
            if let status = (route["direct_response"] as? [String: Any])?["status"] as? Int { return "\(status)" }
            let cluster = (route["route"] as? [String: Any])?["cluster"] as? String ?? "?"
            let unchecked = ((route["typed_per_filter_config"] as? [String: Any])?["envoy.filters.http.ext_authz"] as? [String: Any])?["disabled"] as? Bool == true
            return cluster + (unchecked ? "" : " checked")
        }
        for path in ["/v1/login", "/v1/exchange", "/v1/confirm", "/v1/password", "/v1/verify", "/v1/logout", "/v1/sessions",
                     "/v1/sessions/revoke-others", "/v1/introspect", "/v1/revoke", "/.well-known/oauth-authorization-server", "/healthz"] {
            #expect(destination(path) == "baton", "\(path): \(destination(path))")
        }
        for path in ["/v1/authz", "/v1/authz/api/orders", "/readyz", "/metrics"] {
            #expect(destination(path) == "404", "\(path): \(destination(path))")
        }
        #expect(destination("/api/orders") == "app checked" && destination("/") == "app checked")
        #expect(route(for: "/api/orders")?["request_headers_to_remove"] as? [String] == ["authorization", "dpop"])
        // Issue 42, F3: Baton's marker passes on a refusal and never comes from the app.
        #expect(route(for: "/api/orders")?["response_headers_to_remove"] as? [String] == ["x-baton-refused"])
        #expect(Self.exact(response["allowed_client_headers"]).contains("x-baton-refused"))
        let added = (routeConfig["response_headers_to_add"] as? [[String: Any]]) ?? []
        #expect(added.contains { ($0["header"] as? [String: Any])?["key"] as? String == "strict-transport-security"
                && ($0["header"] as? [String: Any])?["value"] as? String == "max-age=63072000" })
        // The file's lists are the Istio provider's too.
        let istio = try Self.documents("istio-authorization-policy.yaml")
        #expect(istio.count == 2)
        let provider = try #require((((istio[0]["spec"] as? [String: Any])?["meshConfig"] as? [String: Any])?["extensionProviders"] as? [[String: Any]])?.first)
        let http = try #require(provider["envoyExtAuthzHttp"] as? [String: Any])
        #expect(http["pathPrefix"] as? String == "/v1/authz" && http["failOpen"] as? Bool == false)
        #expect((http["headersToUpstreamOnAllow"] as? [String])?.sorted() == identity)
        #expect(http["includeRequestHeadersInCheck"] as? [String] == allowed)
        #expect(http["headersToDownstreamOnDeny"] as? [String] == Self.exact(response["allowed_client_headers"]))
        let policy = try #require(istio[1]["spec"] as? [String: Any])
        #expect(policy["action"] as? String == "CUSTOM" && (policy["provider"] as? [String: Any])?["name"] as? String == provider["name"] as? String)
        // Issue 43, finding 4: every request to the protected workload is checked, its own
        // /v1/ paths included (the policy used to exempt every /v1/* path of the app).
        let rules = try #require(policy["rules"] as? [[String: Any]])
        for path in ["/v1/orders", "/v1/", "/v1/login", "/api/orders", "/", "/healthz"] {
            #expect(rules.contains { Self.istioRule($0, matches: path, host: "shop.example.com") }, "\(path) is not checked")
        }
    }

    /// Whether an AuthorizationPolicy rule matches a request, for the fields the shipped policy
    /// may use (`to.operation` paths, notPaths, hosts, notHosts; Istio's matching: exact, a
    /// `*` prefix or suffix, or `*` alone). A rule without `to` matches every request.
    static func istioRule(_ rule: [String: Any], matches path: String, host: String) -> Bool {
        guard let to = rule["to"] as? [[String: Any]] else { return rule["from"] == nil && rule["when"] == nil }
        func glob(_ pattern: String, _ value: String) -> Bool {
            if pattern == "*" { return true }
            if pattern.hasSuffix("*") { return value.hasPrefix(String(pattern.dropLast())) }
            if pattern.hasPrefix("*") { return value.hasSuffix(String(pattern.dropFirst())) }
            return pattern == value
        }
        return to.contains { entry in
            guard let operation = entry["operation"] as? [String: Any] else { return true }
            let lists: [(String, String, Bool)] = [("paths", path, true), ("notPaths", path, false), ("hosts", host, true), ("notHosts", host, false)]
            return lists.allSatisfy { field, value, positive in
                guard let patterns = operation[field] as? [String] else { return true }
                return patterns.contains { glob($0, value) } == positive
            }
        }
    }
}
