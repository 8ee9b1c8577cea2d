import BatonCore
import BatonDPoP
import BatonHTTP

/// How `baton serve` binds sessions to keys (RFC 9449 DPoP): `--dpop`, the one proof checker
/// of this process (one replay cache), and the public URL proofs are made for.
package struct DPoPOptions: Sendable {
    /// `--dpop`: whether a login's proof binds the new chain.
    package enum Mode: String, Sendable, CaseIterable {
        /// Logins are never bound (a login's `DPoP` header is not looked at). Chains bound
        /// earlier stay bound: turning binding off must not hand their tokens to a thief.
        case off
        /// A login with a valid proof is bound; one without is a bearer chain.
        case optional
        /// Every login needs a valid proof (400 `dpop_required` otherwise).
        case required
    }

    package var mode: Mode = .optional
    /// The checker (policy, replay cache), shared by every request of the process.
    package var checker = ProofChecker(policy: ProofPolicy())
    /// `--public-url`: `scheme://host[:port]`, no path. The `htu` a proof must name is this
    /// plus the request's path; without it, a trusted proxy's forwarding headers or `Host`.
    package var publicURL: String?
    /// The clock proofs' `iat`, the replay cache and the nonces are checked against: the
    /// system's, or a simulation's (`baton-sim` runs the server on simulated time).
    package var clock: any WallClock = SystemClock()

    package init() {}
}

/// A token as the request presented it: `Authorization: Bearer` or `Authorization: DPoP`.
struct Credential {
    var token: String
    var isDPoP: Bool
}

/// The proof side of a request: which URL and method a proof must name, and the check.
/// Every function here is only reached by a request that uses DPoP, so bearer requests pay
/// nothing for it.
struct DPoPGate: Sendable {
    let options: DPoPOptions
    let clientAddress: ClientAddress

    /// A request being authorized whose method and path the request line itself carries
    /// (`/v1/authz`: Envoy sends the original method, and the original path after its prefix).
    struct Original: Equatable {
        var method: String
        /// The original path and query.
        var target: String
    }

    /// The `algs` of a challenge (RFC 9449 §7.1).
    static let algorithms = "ES256 EdDSA"

    /// `WWW-Authenticate` for a refused proof (RFC 9449 §7.1): the error code and a description
    /// as a quoted-string. The description may quote a client's `htu`, so every byte outside
    /// printable ASCII is dropped and `"` and `\` are escaped: nothing a client sends can end
    /// the header or add one.
    static func challenge(error: ErrorCode, description: String) -> String {
        var quoted = ""
        for scalar in description.unicodeScalars where scalar.value >= 0x20 && scalar.value < 0x7F {
            if scalar == "\"" || scalar == "\\" { quoted.append("\\") }
            quoted.unicodeScalars.append(scalar)
        }
        return #"DPoP realm="baton", error=""# + error.rawValue + #"", error_description=""# + quoted + #"", algs=""# + algorithms + "\""
    }

    /// The `DPoP` header values of `request`.
    static func proofs(of request: HTTPRequest) -> [String] {
        request.headers.compactMap { $0.name == "dpop" ? $0.value : nil }
    }

    /// The method and URL a proof for `request` from `peer` must name. From a trusted proxy,
    /// `X-Original-Method` and `X-Original-URI` (nginx `auth_request`, `useOriginal`; Traefik's
    /// `X-Forwarded-Method` and `-Uri` where those are absent: `OriginalRequest`) stand for the
    /// request being authorized, and `X-Forwarded-Proto`/`X-Forwarded-Host` for the public
    /// scheme and host; `--public-url` outranks the forwarded scheme and host.
    /// `original`, when given, is the request being authorized whoever sent it (`/v1/authz`:
    /// the check's own method and path): its method and path are the ones a proof must name,
    /// with the origin found as above, and no header is read for them.
    func target(of request: HTTPRequest, from peer: IPAddress, useOriginal: Bool, original: Original? = nil) -> (method: String, url: String) {
        let trusted = clientAddress.isTrusted(peer)
        var path = request.target
        if let original {
            path = original.target
        } else if trusted, useOriginal, let uri = OriginalRequest.uri(in: request) {
            path = uri
        }
        return (method(of: request, trusted: trusted, useOriginal: useOriginal, original: original), origin(of: request, trusted: trusted) + path)
    }

    /// `target`'s method alone (no URL is built).
    func method(of request: HTTPRequest, from peer: IPAddress, useOriginal: Bool, original: Original? = nil) -> String {
        method(of: request, trusted: clientAddress.isTrusted(peer), useOriginal: useOriginal, original: original)
    }

    private func method(of request: HTTPRequest, trusted: Bool, useOriginal: Bool, original: Original?) -> String {
        if let original { return original.method }
        if trusted, useOriginal, let method = OriginalRequest.method(in: request) { return method }
        return request.method
    }

    /// The scheme, host and port clients reach Baton at: `--public-url`, else a trusted
    /// proxy's `X-Forwarded-Proto` and `X-Forwarded-Host` (or `Host`), else `http://` and `Host`.
    func origin(of request: HTTPRequest, trusted: Bool) -> String {
        if let publicURL = options.publicURL {
            return publicURL
        } else if trusted, let proto = request.header("x-forwarded-proto") {
            let scheme = proto.split(separator: ",").first.map { String($0.trimmingSpaces) } ?? proto
            let host = request.header("x-forwarded-host").flatMap { $0.split(separator: ",").first.map { String($0.trimmingSpaces) } }
            return scheme + "://" + (host ?? request.header("host") ?? "")
        } else {
            return "http://" + (request.header("host") ?? "")
        }
    }

    /// What the request's proof shows for a token presented as DPoP (`.bearer` for Bearer,
    /// without looking at any `DPoP` header: RFC 9449 §7.2), and for a verified proof the
    /// replay check the operation makes once the proof's key proves to be the chain's.
    ///
    /// `deferSignature` (verify and authz, which run on the event loops): the signature is
    /// left to the operation (`.awaitingSignature`), which checks it only for a proof by the
    /// chain's key and within the chain's budget of refused proofs, so a flood of proofs by
    /// other keys or with bad signatures costs the loops next to nothing (issue 28, finding 3).
    /// The other operations check it here, before their write transaction.
    func presentation(of credential: Credential, in request: HTTPRequest, from peer: IPAddress,
                      useOriginal: Bool, original: Original? = nil, deferSignature: Bool = false) -> (PresentedProof, ProofReplayClaim?) {
        guard credential.isDPoP else { return (.bearer, nil) }
        let proofs = Self.proofs(of: request)
        guard proofs.count == 1 else {
            if proofs.isEmpty { return (.missing, nil) }
            return (Self.failed(.multipleHeaders), nil)
        }
        let (method, url) = target(of: request, from: peer, useOriginal: useOriginal, original: original)
        do {
            let tokenHash = TokenHash(of: credential.token)
            guard deferSignature else {
                let (thumbprint, claim) = try options.checker.accept(proofs[0], method: method, url: url, tokenHash: tokenHash,
                                                                     now: options.clock.now())
                return (.verified(jkt: thumbprint.text), claim)
            }
            let (thumbprint, claim, signature) = try options.checker.acceptDeferringSignature(proofs[0], method: method, url: url,
                                                                                              tokenHash: tokenHash, now: options.clock.now())
            let check = SignatureCheck {
                do throws(ProofError) {
                    try signature.verify()
                    return nil
                } catch {
                    return SignatureCheck.Failure(failure: error.failure, description: error.description)
                }
            }
            return (.awaitingSignature(jkt: thumbprint.text, check: check), claim)
        } catch {
            return (Self.failed(error), nil)
        }
    }

    /// The thumbprint a login binds its chain to and the proof's replay check (made once the
    /// password is right), or nil for a bearer login.
    /// - Throws: `.dpopRequired` (`--dpop required`, no proof), `.invalidDPoPProof`,
    ///   `.useDPoPNonce`.
    func loginKey(_ request: HTTPRequest, from peer: IPAddress) throws(BatonError) -> (jkt: String, claim: ProofReplayClaim)? {
        guard options.mode != .off else { return nil }
        guard !Self.proofs(of: request).isEmpty || options.mode == .required else { return nil }
        return try requiredKey(request, from: peer)
    }

    /// The key of a request that must carry exactly one proof, whatever `--dpop` says: a token
    /// exchange through an identity provider (docs/identity.md) makes only bound chains.
    /// - Throws: `.dpopRequired` without a proof; `.invalidDPoPProof` for a refused one.
    func requiredKey(_ request: HTTPRequest, from peer: IPAddress) throws(BatonError) -> (jkt: String, claim: ProofReplayClaim) {
        let proofs = Self.proofs(of: request)
        guard proofs.count == 1 else {
            if proofs.isEmpty { throw .dpopRequired }
            throw Self.refusal(.multipleHeaders)
        }
        let (method, url) = target(of: request, from: peer, useOriginal: false)
        do {
            let (thumbprint, claim) = try options.checker.accept(proofs[0], method: method, url: url, tokenHash: nil, now: options.clock.now())
            return (thumbprint.text, claim)
        } catch {
            throw Self.refusal(error)
        }
    }

    /// The nonce to hand out now (`DPoP-Nonce`), unless nonces are off.
    var currentNonce: String? { options.checker.policy.nonces.source?.nonce(at: options.clock.now()) }

    /// Whether every proof must carry a nonce (`--dpop-nonce always`): answers then carry the
    /// current one, so a client keeps up without a refused request at each slot.
    var noncesAlways: Bool {
        if case .always = options.checker.policy.nonces { return true }
        return false
    }

    private static func failed(_ error: ProofError) -> PresentedProof {
        .failed(failure: error.failure, description: error.description, needsNonce: error.answer == .useNonce)
    }

    private static func refusal(_ error: ProofError) -> BatonError {
        error.answer == .useNonce ? .useDPoPNonce(failure: error.failure, description: error.description)
                                  : .invalidDPoPProof(failure: error.failure, description: error.description)
    }
}
