import BatonCore
import BatonHTTP
import BatonStorage

extension API {
    /// `POST /v1/introspect` (RFC 7662) and `POST /v1/revoke` (RFC 7009), for resource servers
    /// and gateways that speak OAuth rather than verify's subrequest (Kong, API managers).
    ///
    /// The caller authenticates first (`client_secret_basic`, `--introspection-client`), so an
    /// anonymous caller learns nothing, not even whether a token parameter was well-formed.
    /// Then the form body's `token`; `token_type_hint` is accepted and ignored (RFC 7662 §2.1,
    /// RFC 7009 §2.1: Baton issues one kind of token).
    func oauth(_ route: Route, _ request: HTTPRequest, context: RequestContext, peer: IPAddress) throws(BatonError) -> Outcome {
        let clientID: String
        switch clients.authenticate(request.header("authorization"), ip: context.ip, now: SystemClock().now()) {
        case .authenticated(let id):
            clientID = id
        case .refused:
            return Outcome(ErrorResponse.body(401, .invalidClient,
                                              "Client authentication failed: send a configured client id and secret with HTTP Basic (client_secret_basic).",
                                              headers: [("WWW-Authenticate", ClientAuthenticator.challenge)]),
                           error: .invalidClient)
        case .throttled(let seconds):
            return Outcome(ErrorResponse.body(429, .tooManyAttempts, "Too many failed client authentications; retry after \(seconds) seconds.",
                                              headers: [("Retry-After", String(seconds))]),
                           error: .tooManyAttempts)
        }
        guard Self.isForm(request.header("content-type")) else {
            return Outcome(ErrorResponse.body(415, .unsupportedMediaType, "Send the body as Content-Type: application/x-www-form-urlencoded."),
                           error: .unsupportedMediaType)
        }
        let form = try FormBody(request.body)
        guard let token = form.value("token") else { throw .invalidArgument("The token parameter is missing.") }
        if route == .introspect {
            let answer = try store.introspect(token)
            return Outcome(.json(200, Self.introspectionJSON(answer, issuer: issuer(of: request, peer: peer)),
                                 headers: [("Cache-Control", "no-store"), ("Pragma", "no-cache")]),
                           chainID: answer?.chainID)
        }
        // RFC 7009 §2.2: 200 whether or not the token was valid or already revoked.
        let chain = try store.revokeChain(ofToken: token, note: "revoked at /v1/revoke by client \(clientID)", context: context)
        return Outcome(HTTPResponse(status: 200, headers: [("Cache-Control", "no-store")]), chainID: chain)
    }

    /// `GET /.well-known/oauth-authorization-server` (RFC 8414): what Baton offers of OAuth.
    /// Cacheable for 5 minutes only when the issuer is `--public-url`: without it the issuer
    /// and endpoints come from the request's `Host` (or a trusted gateway's forwarded host),
    /// and a shared cache keeping one client's answer would send the next clients' Basic
    /// credentials to whatever host that request named (issue 43's observations): `no-store`.
    func metadata(_ request: HTTPRequest, peer: IPAddress) -> Outcome {
        let caching = gate.options.publicURL == nil ? "no-store" : "max-age=300"
        return Outcome(.json(200, Self.metadataJSON(issuer: issuer(of: request, peer: peer)), headers: [("Cache-Control", caching)]))
    }

    /// The issuer: `--public-url`, else the origin a trusted gateway forwarded, else `Host`
    /// (as a DPoP proof's `htu` is found).
    func issuer(of request: HTTPRequest, peer: IPAddress) -> String {
        gate.origin(of: request, trusted: gate.clientAddress.isTrusted(peer))
    }

    /// RFC 7662 §2.2: `{"active":false}` alone for a token that grants nothing (no hint why:
    /// §4), else the standard claims and Baton's (`chain_id`, `device_id`), and `cnf.jkt`
    /// with `token_type` `DPoP` for a bound chain (RFC 9449 §6.2).
    static func introspectionJSON(_ answer: Introspection?, issuer: String) -> String {
        guard let answer else { return #"{"active":false}"# }
        var members: [String: JSONValue] = [
            "active": .bool(true), "iss": .string(issuer), "sub": .string(String(answer.userID)), "username": .string(answer.username),
            "token_type": .string(answer.jkt == nil ? "Bearer" : "DPoP"),
            "iat": .int(answer.issuedAt.epochSeconds), "exp": .int(answer.expiresAt.epochSeconds), "auth_time": .int(answer.authTime.epochSeconds),
            "chain_id": .string(answer.chainID.description), "device_id": .string(answer.deviceID),
        ]
        if let jkt = answer.jkt { members["cnf"] = .object(["jkt": .string(jkt)]) }
        return JSONValue.object(members).text
    }

    /// RFC 8414 §2. Baton has no authorization or token endpoint (login and exchange are its
    /// own API, not OAuth grants), so `response_types_supported`, required, is empty and no
    /// grant type is listed.
    static func metadataJSON(issuer: String) -> String {
        let basic: JSONValue = .array([.string("client_secret_basic")])
        return JSONValue.object([
            "issuer": .string(issuer),
            "introspection_endpoint": .string(issuer + Route.introspect.rawValue),
            "introspection_endpoint_auth_methods_supported": basic,
            "revocation_endpoint": .string(issuer + Route.revoke.rawValue),
            "revocation_endpoint_auth_methods_supported": basic,
            "dpop_signing_alg_values_supported": .array(DPoPGate.algorithms.split(separator: " ").map { .string(String($0)) }),
            "response_types_supported": .array([]),
            "grant_types_supported": .array([]),
        ]).text
    }

    static func isForm(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first?.trimmingSpaces.lowercased()
        return mediaType == "application/x-www-form-urlencoded"
    }
}
