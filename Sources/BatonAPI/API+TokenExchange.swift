import BatonCore
import BatonHTTP
import BatonIdentity
import BatonStorage

extension API {
    /// RFC 8693 §2.1's grant type, the only one `/v1/token-exchange` serves.
    static let tokenExchangeGrant = "urn:ietf:params:oauth:grant-type:token-exchange"
    /// What it issues (RFC 8693 §3): a Baton token, presented as an access token.
    static let issuedTokenType = "urn:ietf:params:oauth:token-type:access_token"
    /// Parameters of RFC 8693 that ask for something Baton does not issue: refused, not ignored.
    static let unsupportedExchangeParameters = ["actor_token", "actor_token_type", "resource", "audience", "scope"]

    /// `POST /v1/token-exchange` (docs/identity.md): an identity provider's ID token, or the
    /// bank backend's assertion, for a new chain bound to the DPoP proof's key. Cheap checks
    /// first (form, proof), then the issuer's configuration (one read), its keys (cached;
    /// fetched on a worker, never an event loop), the token's signature and claims, and the
    /// login itself. A refused subject token changes nothing and writes nothing.
    func tokenExchange(_ request: HTTPRequest, context: RequestContext, peer: IPAddress) throws(BatonError) -> Outcome {
        guard Self.isForm(request.header("content-type")) else {
            return Outcome(ErrorResponse.body(415, .unsupportedMediaType, "Send the body as Content-Type: application/x-www-form-urlencoded."))
        }
        let form = try FormBody(request.body)
        guard form.value("grant_type") == Self.tokenExchangeGrant else {
            throw .invalidArgument("grant_type must be \(Self.tokenExchangeGrant).")
        }
        guard let token = form.value("subject_token") else { throw .invalidArgument("subject_token is required.") }
        guard let typeText = form.value("subject_token_type") else { throw .invalidArgument("subject_token_type is required.") }
        guard let type = SubjectTokenType(rawValue: typeText) else {
            throw .invalidArgument("subject_token_type must be \(SubjectTokenType.idToken.rawValue) or \(SubjectTokenType.jwt.rawValue).")
        }
        if let requested = form.value("requested_token_type"), requested != Self.issuedTokenType {
            throw .invalidArgument("requested_token_type must be \(Self.issuedTokenType) (or absent).")
        }
        if let parameter = Self.unsupportedExchangeParameters.first(where: { form.value($0) != nil }) {
            throw .invalidArgument("The parameter '\(parameter)' is not supported: this endpoint issues only Baton session tokens.")
        }
        guard let deviceID = form.value("device_id") else { throw .invalidArgument("device_id is required.") }
        try LoginRequest.validateIdentifier(deviceID, named: "device_id")
        var deviceClass = DeviceClass.other
        if let text = form.value("device_class") {
            guard let parsed = DeviceClass(rawValue: text) else { throw .invalidArgument("device_class must be one of mobile, desktop, web, other.") }
            deviceClass = parsed
        }
        let deviceName = form.value("device_name")
        if let deviceName { try LoginRequest.validateIdentifier(deviceName, named: "device_name") }
        // The subject token's checks that need no cryptography first (its issuer's row, the
        // issuer's keys, cached), then the proof's signature, then the token's: a forged token
        // costs no signature verification (docs/benchmarks.md, the forged-ID-token flood).
        let parsed = try Self.parsed(token)
        let issuer = try configuredIssuer(of: parsed)
        let keys = try keySet(for: issuer, token: parsed)
        do { try SubjectTokenCheck.precheck(parsed, type: type, issuer: issuer, keys: keys) } catch { throw Self.refusal(error) }
        let proof = try gate.requiredKey(request, from: peer)
        let subject = try validatedSubject(parsed, type: type, issuer: issuer, keys: keys, proofThumbprint: proof.jkt)
        var context = context
        context.replayClaim = proof.claim
        let login = IdentityLoginRequest(
            issuerName: issuer.name, issuer: issuer.issuer, subject: subject.subject, createsUsers: issuer.newUsers == .create,
            authTime: subject.authTime, replayDigests: subject.replayDigests, keepUntil: subject.keepUntil, deviceID: deviceID,
            deviceClass: deviceClass, deviceName: deviceName, proofKey: proof.jkt)
        let bundle = try store.login(identity: login, context: context)
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json"), ("Cache-Control", "no-store")]
        if gate.noncesAlways, let nonce = gate.currentNonce { headers.append(("DPoP-Nonce", nonce)) }
        return Outcome(HTTPResponse(status: 200, headers: headers, body: Self.tokenExchangeBody(bundle)), chainID: bundle.chainID)
    }

    /// `/v1/confirm` with `{"id_token"}`: step-up through the identity provider for a bound
    /// chain (docs/identity.md). The ID token is checked as at the token exchange, its nonce
    /// against the key of the request's proof (which the store then checks is the chain's).
    func confirmWithIDToken(_ token: String, _ idToken: String, context: RequestContext) throws(BatonError) -> Instant {
        let jkt: String
        switch context.proof {
        case .verified(let thumbprint), .awaitingSignature(let thumbprint, _): jkt = thumbprint
        default:
            throw .invalidArgument("id_token: a confirmation through the identity provider needs a DPoP-bound session and its proof.")
        }
        let parsed = try Self.parsed(idToken)
        let issuer = try configuredIssuer(of: parsed)
        let subject = try validatedSubject(parsed, type: .idToken, issuer: issuer, keys: try keySet(for: issuer, token: parsed), proofThumbprint: jkt)
        // A step-up needs the provider to say when the user authenticated: a token re-issued
        // silently (a refresh, prompt=none) has a fresh iat and no authentication behind it.
        guard let authTime = subject.authTime else {
            throw .invalidGrant(failure: "no_auth_time", description: "The ID token has no auth_time: ask the provider for a fresh authentication (max_age or prompt=login).")
        }
        return try store.confirm(token, identity: IdentityConfirmation(issuer: subject.issuer, subject: subject.subject, authTime: authTime,
                                                                      replayDigests: subject.replayDigests, keepUntil: subject.keepUntil),
                                 context: context)
    }

    /// `issuer`'s keys for `token` (cached; fetched when the token names a `kid` the set lacks,
    /// within `KeySetCache`'s bounds).
    private func keySet(for issuer: IdentityIssuer, token: SubjectToken) throws(BatonError) -> KeySet {
        do { return try identityKeys.keys(for: issuer, kid: token.keyID) } catch {
            throw .unavailable("the keys of the identity provider '\(issuer.name)' could not be loaded: \(error.description)")
        }
    }

    /// `token` checked against `issuer`'s `keys` and rules.
    private func validatedSubject(
        _ token: SubjectToken, type: SubjectTokenType, issuer: IdentityIssuer, keys: KeySet, proofThumbprint: String
    ) throws(BatonError) -> ValidatedSubject {
        do {
            return try SubjectTokenCheck.validate(token, type: type, issuer: issuer, keys: keys, now: SystemClock().now(), proofThumbprint: proofThumbprint)
        } catch {
            throw Self.refusal(error)
        }
    }

    /// The issuer whose `iss` the token claims (unverified: it only picks the configuration
    /// the token is then checked against).
    private func configuredIssuer(of token: SubjectToken) throws(BatonError) -> IdentityIssuer {
        let claimed: String
        do { claimed = try token.claimedIssuer() } catch { throw Self.refusal(error) }
        guard let record = try store.identityIssuer(issuer: claimed) else { throw Self.refusal(.unknownIssuer) }
        guard let issuer = identityIssuers.issuer(record) else {
            throw .unavailable("the settings of the identity provider '\(record.name)' cannot be read by this build")
        }
        return issuer
    }

    private static func parsed(_ token: String) throws(BatonError) -> SubjectToken {
        do { return try SubjectToken(token) } catch { throw refusal(error) }
    }

    static func refusal(_ refusal: SubjectTokenRefusal) -> BatonError {
        .invalidGrant(failure: refusal.failure, description: refusal.description)
    }

    /// A login's answer (`bundleBody`) with RFC 8693 §2.2.1's members: `access_token` (the
    /// token again) and `issued_token_type`.
    static func tokenExchangeBody(_ bundle: TokenBundle) -> [UInt8] {
        var out = bundleBody(bundle)
        out.removeLast()  // the closing brace
        out.append(utf8: #","access_token":"#)
        JSONValue.writeString(bundle.token, to: &out)
        out.append(utf8: #","issued_token_type":""# + issuedTokenType + #""}"#)
        return out
    }
}
