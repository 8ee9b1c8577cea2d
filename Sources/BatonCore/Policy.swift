/// The lifetimes, device rules and step-up limit the store enforces (R2, R3a, R5, R7).
///
/// Lifetimes are read at decision time, not stamped on rows at login, so an operator who
/// shortens `maxSession` or `exchangeWindow` shortens live sessions too.
package struct Policy: Sendable, Equatable {
    /// How long a token grants access after it is issued (default 15 minutes).
    package var tokenTTL: Duration = .seconds(15 * 60)
    /// How long after its expiry a head may still be exchanged (default 7 days).
    package var exchangeWindow: Duration = .seconds(7 * 86_400)
    /// Absolute life of a chain from its login (default 30 days).
    package var maxSession: Duration = .seconds(30 * 86_400)
    /// R3a: how long after an exchange a lost-response retry is honoured; zero is strict.
    package var retryGrace: Duration = .seconds(10)
    /// R3b: how long after a bound chain's token was exchanged a late, numbered attempt of an
    /// exchange of it, proved by the chain's key, is answered without revoking: the longest a
    /// DPoP proof lives (`ProofPolicy.maximumAge`, 60 s), so the attempt was made before its
    /// token was consumed, by the device, and only reached the server late.
    package var lateAttemptWindow: Duration = .seconds(60)
    /// R7: live chains a user may hold; a login beyond it evicts the oldest. Zero: no limit.
    package var maxChainsPerUser: Int = 10
    /// R7: a login revokes the user's live chain of the same device class.
    package var oneChainPerDeviceClass: Bool = false
    /// Step-up: the consecutive wrong confirmations that revoke a chain (`confirm_failed`).
    package var maxConfirmFailures: Int = 5

    package init() {}
}
