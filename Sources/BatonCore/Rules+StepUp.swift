/// Step-up authentication (RFC 9470): how recent a chain's authentication is, and what a
/// confirmation (`/v1/confirm`, or `/v1/password`'s current password) does to the chain.
extension Rules {
    /// What a confirmation should do once the password was checked.
    package enum ConfirmOutcome: Equatable, Sendable {
        /// Right password: `auth_time` becomes now and the failure count 0.
        case confirmed
        /// Wrong password: the chain's consecutive failure count becomes this.
        case failed(consecutiveFailures: Int)
        /// Wrong password for the policy's last allowed time: revoke the chain (`confirm_failed`),
        /// so that a thief holding a token cannot guess the password through confirm.
        case revoke(consecutiveFailures: Int)
        /// R4: an R3a-revoked sibling was presented; revoke the chain.
        case forkDetected
        /// The token is not one verify accepts; the password is not looked at.
        case rejected(BatonError)
    }

    /// Whether the chain's last active authentication lies within `maxAge` of `now`
    /// (RFC 9470 §3: "the allowable elapsed time … since the last active authentication event").
    package static func isRecent(_ chain: ChainHead, maxAge: Duration, now: Instant) -> Bool {
        now - chain.authTime <= maxAge
    }

    /// A confirmation: the token must be one verify would accept now (the same answers in the
    /// same precedence: a consumed, revoked, expired or forged token is refused as verify
    /// refuses it), then the password decides. Only a wrong password counts as a failure.
    package static func confirm(
        _ standing: Standing, _ chain: ChainHead, passwordMatches: Bool, now: Instant, _ policy: Policy
    ) -> ConfirmOutcome {
        switch verify(standing, chain, now: now, policy) {
        case .rejected(let error): return .rejected(error)
        case .forkDetected: return .forkDetected
        case .accepted: break
        }
        if passwordMatches { return .confirmed }
        let failures = chain.confirmFailures + 1
        return policy.maxConfirmFailures > 0 && failures >= policy.maxConfirmFailures
            ? .revoke(consecutiveFailures: failures) : .failed(consecutiveFailures: failures)
    }
}
