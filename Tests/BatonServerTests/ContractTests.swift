@testable import BatonCore
import Foundation
import Testing

/// docs/openapi.yaml and the server agree: every documented path is served, and the error
/// codes the spec lists are exactly the ones the code can send.
struct ContractTests {
    static let spec: String = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/openapi.yaml")
        return (try? String(contentsOf: url, encoding: .utf8)) ?? ""
    }()

    @Test func everyDocumentedPathIsServed() throws {
        let paths = Self.spec.split(separator: "\n").filter { $0.hasPrefix("  /") }.map { String($0.dropFirst(2).dropLast()) }
        #expect(paths == ["/v1/login", "/v1/token-exchange", "/v1/exchange", "/v1/verify", "/v1/confirm", "/v1/password", "/v1/logout",
                          "/v1/sessions", "/v1/sessions/revoke-others", "/v1/sessions/{chain_id}",
                          "/v1/authz/{original_path}", "/v1/introspect", "/v1/revoke", "/.well-known/oauth-authorization-server",
                          "/healthz", "/readyz", "/metrics"])
        let server = try ServerProcess()
        for path in paths {
            let method = switch path {
            case "/v1/login", "/v1/token-exchange", "/v1/exchange", "/v1/logout", "/v1/confirm", "/v1/password", "/v1/sessions/revoke-others",
                 "/v1/introspect", "/v1/revoke": "POST"
            case "/v1/sessions/{chain_id}": "DELETE"
            default: "GET"
            }
            // Without a token: anything but 404 shows the path is served (a token route says 401).
            let concrete = path.replacingOccurrences(of: "{chain_id}", with: "0123456789abcdef")
                .replacingOccurrences(of: "{original_path}", with: "api/orders")
            #expect(try server.request(method, concrete).status != 404, "\(path)")
        }
    }

    @Test func documentedErrorCodesAreExactlyTheWireCodes() {
        guard let start = Self.spec.range(of: "enum: [token_missing"),
              let end = Self.spec[start.upperBound...].range(of: "]") else {
            Issue.record("error enum not found in openapi.yaml")
            return
        }
        let listed = Self.spec[start.lowerBound..<end.lowerBound].dropFirst("enum: [".count)
            .split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\n" }).map(String.init)
        // `conflict` is the admin CLI's (user exists); the HTTP API never sends it.
        let wire = ErrorCode.allCases.map(\.rawValue).filter { $0 != "conflict" }
        #expect(Set(listed) == Set(wire))
        let reasons = RevocationReason.allCases.map(\.rawValue)
        for reason in reasons { #expect(Self.spec.contains(reason), "\(reason)") }
    }
}
