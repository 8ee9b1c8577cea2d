import BatonHTTP

/// The request a gateway asks verify to authorize, as the gateway names it in headers of its
/// own: nginx's `auth_request` and the shipped Caddyfile send `X-Original-Method` and
/// `X-Original-URI`; Traefik's `forwardAuth` (and Caddy's `forward_auth`, alongside) send
/// `X-Forwarded-Method` and `X-Forwarded-Uri`, and Traefik cannot send any other name with
/// the request's values. Pure: the headers in, the method or request-target out. The caller
/// believes them only from a trusted proxy (`DPoPGate.target`).
enum OriginalRequest {
    /// The original request's method: `X-Original-Method`, else `X-Forwarded-Method`.
    ///
    /// The `X-Original-*` names outrank: a gateway that sets them (nginx, Caddy) names the
    /// request with them on every proxied request, so a client's own `X-Forwarded-Method`
    /// that such a gateway passed through is never read.
    static func method(in request: HTTPRequest) -> String? {
        request.header("x-original-method") ?? request.header("x-forwarded-method")
    }

    /// The original request's target (path and query, as the client sent it):
    /// `X-Original-URI`, else `X-Forwarded-Uri`; the same precedence as `method(in:)`.
    static func uri(in request: HTTPRequest) -> String? {
        request.header("x-original-uri") ?? request.header("x-forwarded-uri")
    }
}
