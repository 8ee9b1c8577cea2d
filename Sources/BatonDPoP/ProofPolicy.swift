/// What a server accepts in a DPoP proof beyond RFC 9449's fixed rules.
package struct ProofPolicy: Sendable {
    /// When a proof must carry a server nonce (RFC 9449 §8).
    package enum NonceUse: Sendable {
        /// Never: freshness comes from `iat` alone; a `nonce` claim is ignored.
        case off
        /// When `iat` is outside the window (a client with a wrong clock): such a proof is
        /// answered `use_dpop_nonce`, and a proof with a valid nonce is fresh whatever its
        /// `iat`. A proof with a nonce that is not valid is answered `use_dpop_nonce` too.
        case whenClockIsOff(NonceSource)
        /// Always: every proof must carry a valid nonce; `iat` is not checked.
        case always(NonceSource)

        /// The source, unless nonces are off.
        package var source: NonceSource? {
            switch self {
            case .off: nil
            case .whenClockIsOff(let source), .always(let source): source
            }
        }
    }

    /// The `alg` values accepted; each is asymmetric by construction (`ProofAlgorithm`).
    package var algorithms: Set<ProofAlgorithm> = Set(ProofAlgorithm.allCases)
    /// How long after its `iat` a proof is accepted.
    package var maximumAge: Duration = .seconds(60)
    /// How far ahead of the server's clock a proof's `iat` may be.
    package var maximumClockAhead: Duration = .seconds(10)
    /// Server nonces.
    package var nonces: NonceUse = .off
    /// The longest `DPoP` header value accepted, in bytes (an ES256 proof is about 600).
    package var maximumLength = 8192

    package init() {}

    /// How long a proof stays acceptable after it was first accepted: how long the replay
    /// cache must remember its `jti` (RFC 9449 §11.1). By `iat`, until `iat + maximumAge`
    /// with `iat` at most `maximumClockAhead` from now; by nonce, the nonce's lifetime.
    package var replayWindow: Duration {
        let byTime = maximumAge + maximumClockAhead
        guard let source = nonces.source else { return byTime }
        return max(byTime, source.lifetime)
    }
}
