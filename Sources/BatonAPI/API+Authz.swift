import BatonCore
import BatonHTTP
import BatonStorage

extension API {
    /// The identity headers of an accepted token, for the gateway to copy to the app
    /// (verify's answer and `/v1/authz`'s: Envoy's `allowed_upstream_headers`).
    static let identityHeaders = ["X-Baton-User-Id", "X-Baton-Username", "X-Baton-Chain-Id", "X-Baton-Auth-Time"]

    /// 200 with the identity headers and verify's JSON body.
    func verifiedOutcome(_ verified: Verification, context: RequestContext) -> Outcome {
        var headers: [(name: String, value: String)] = [
            ("Content-Type", "application/json"),
            ("X-Baton-User-Id", String(verified.userID)), ("X-Baton-Username", verified.username),
            ("X-Baton-Chain-Id", verified.chainID.description), ("X-Baton-Auth-Time", String(verified.authTime.epochSeconds)),
            ("Cache-Control", "no-store"),
        ]
        headers += nonceHeader(context)  // appended in place: `[…] + […]` made a second array on every verify
        return Outcome(HTTPResponse(status: 200, headers: headers, body: Self.verificationBody(verified)), chainID: verified.chainID)
    }

    /// `/v1/authz/…`: Envoy's external authorization in HTTP mode. The request line is the
    /// original request's (its method; `path_prefix` then its path and query), the headers the
    /// ones Envoy's `allowed_headers` passes. The answer is verify's: 200 with the identity
    /// headers, or 401/403 with the challenge. The DPoP proof must name the original method and
    /// URL; the `--authz-step-up` rules apply to the original path; a state-changing original
    /// request of a bound chain records its proof durably, as verify does.
    ///
    /// `x-envoy-original-path` is never read: Envoy sets it only when a route rewrote the path
    /// (after this filter has run), and a client may send one of its own.
    func authorize(_ request: HTTPRequest, context: inout RequestContext, peer: IPAddress, onLoop: Bool) throws(BatonError) -> Outcome {
        let target = try AuthzTarget.original(of: request.target)
        let maxAge = StepUpPath.maxAge(for: target, in: authzStepUp)
        let original = DPoPGate.Original(method: request.method, target: target)
        guard let token = try token(request, &context, peer: peer, route: .authz, original: original) else {
            return Outcome(ErrorResponse.tokenMissing, error: .tokenMissing)
        }
        return try verifying(token, maxAge: maxAge, context: context, onLoop: onLoop)
    }
}
