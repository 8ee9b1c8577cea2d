import BatonCore

/// The store's operations as the API and the server use them: one protocol, two
/// implementations (`TokenStore` on SQLite with its group-commit writer, `PostgresStore` with
/// row locks). Both decide through the same pure `Rules`; each owns its SQL and its
/// concurrency, and neither hands a connection upward.
///
/// Every method blocks its caller (but `exchange(_:context:then:)`, which says when) and is
/// safe to call from any thread. A storage failure is `BatonError.unavailable` (503), never a
/// wrong answer.
package protocol LineageStore: AnyObject, Sendable {
    /// R1: checks the password and creates a chain with its generation-0 token (R7 applied).
    func login(_ request: LoginRequest, context: RequestContext) throws(BatonError) -> TokenBundle
    /// The configured identity provider whose `iss` is exactly `issuer`, or nil.
    func identityIssuer(issuer: String) throws(BatonError) -> IdentityIssuerRecord?
    /// R1 through an identity provider: a validated subject token's identity logs in to a new
    /// chain bound to the proof's key (docs/identity.md).
    func login(identity request: IdentityLoginRequest, context: RequestContext) throws(BatonError) -> TokenBundle
    /// R2/R3/R3a/R4: exchanges `token` for its successor, exactly once; answered after commit.
    func exchange(_ token: String, context: RequestContext) throws(BatonError) -> TokenBundle
    /// `exchange`, answered through `then` exactly once: when `writesWithoutWaiting`, this
    /// returns at once and `then` runs on the store's writer thread after the commit (it must
    /// not block); otherwise `then` runs before this returns.
    func exchange(_ token: String, context: RequestContext, then: @escaping @Sendable (Result<TokenBundle, BatonError>) -> Void)
    /// Whether `exchange(_:context:then:)` returns without waiting for the database, so an
    /// event loop may start it (SQLite's group-commit writer answers on its own thread).
    var writesWithoutWaiting: Bool { get }
    /// R5: whether `token` grants access now, and to whom (`maxAge`: RFC 9470 step-up).
    func verify(_ token: String, maxAge: Duration?, context: RequestContext) throws(BatonError) -> Verification
    /// Verify's answer from memory alone, never waiting for the database (an event loop's
    /// call); nil when `verify` must be called instead, which this call has not pre-empted.
    func verifyFromMemory(_ token: String, maxAge: Duration?, context: RequestContext) throws(BatonError) -> Verification?
    /// R6: revokes the chain of the presented head.
    func logout(_ token: String, context: RequestContext) throws(BatonError)
    /// RFC 7662: what `token` grants now, or nil when it grants nothing (forged, unknown,
    /// consumed, expired, revoked). A pure read: no R3a mark, no R4 revocation, no audit.
    func introspect(_ token: String) throws(BatonError) -> Introspection?
    /// RFC 7009: revokes the chain of any token Baton issued (head or consumed), with reason
    /// `logout` and `note`; returns the chain, or nil for a forged or unknown token (nothing
    /// revoked). Idempotent: an already revoked chain stays as it was.
    func revokeChain(ofToken token: String, note: String, context: RequestContext) throws(BatonError) -> ChainID?
    /// Step-up: re-checks the password; returns the chain's new `auth_time`.
    func confirm(_ token: String, password: String, context: RequestContext) throws(BatonError) -> Instant
    /// Step-up with an identity provider's fresh ID token instead of a password (docs/identity.md).
    func confirm(_ token: String, identity: IdentityConfirmation, context: RequestContext) throws(BatonError) -> Instant
    /// Self-service password change by the chain's user (revokes the user's other chains).
    func changePassword(presentedBy token: String, current: String, new newPassword: String, context: RequestContext) throws(BatonError) -> PasswordChange
    /// The live sessions of the token's user, newest first, the token's own marked current.
    /// The token must be one verify accepts.
    func sessions(presentedBy token: String, context: RequestContext) throws(BatonError) -> [Session]
    /// Signs out one session of the token's user (`signed_out`). A critical operation: the
    /// token's chain must have authenticated within `maxAge`.
    /// - Throws: as verify with `maxAge`; `.sessionNotFound` for a session that is not the user's
    ///   (or not live), without telling which.
    func signOut(session: ChainID, presentedBy token: String, maxAge: Duration, context: RequestContext) throws(BatonError)
    /// Signs out every other session of the token's user; returns them. Critical, as `signOut`.
    func signOutOtherSessions(presentedBy token: String, maxAge: Duration, context: RequestContext) throws(BatonError) -> [ChainID]
    /// Creates an account (the admin CLI's `user add`); returns its id.
    func createUser(_ username: String, password: String, context: RequestContext) throws(BatonError) -> Int64
    /// Whether a write can be made durable now (`/readyz`).
    func isWritable() -> Bool
    /// The chain a MAC-verified token names, for logging a refused request.
    func chainID(ofToken token: String) -> ChainID?
    /// The refusal of a verify's DPoP proof for `chain` before it is parsed, when the chain
    /// is over its budget of refused proofs; nil otherwise (issue 28, finding 3).
    func proofBudgetRefusal(for chain: ChainID) -> BatonError?
    /// Committed totals since start, for `/metrics`.
    var committedTotals: CommittedTotals { get }
    /// Hands every committed transaction's audit events to `observer`, after COMMIT returned,
    /// on the committing thread (the server's security log). One observer; a later call
    /// replaces it.
    func observeCommits(_ observer: @escaping @Sendable ([AuditEvent]) -> Void)
    /// The backend's own metric families in Prometheus text (group commit and WAL for
    /// SQLite, connection pool for PostgreSQL), appended after the shared ones.
    func storageMetricsText() -> String
    /// Finishes queued writes and closes every connection.
    func close()
}

/// Totals of committed events, counted after each COMMIT returned.
package struct CommittedTotals: Sendable, Equatable {
    /// Audit events by kind.
    package var events: [AuditKind: Int] = [:]
    /// Chains revoked, by reason.
    package var revocations: [RevocationReason: Int] = [:]
    /// Failed confirmations by error code (`invalid_credentials`, `too_many_attempts`).
    package var stepUpFailures: [String: Int] = [:]

    package init() {}

    /// Counts one committed audit event.
    package mutating func count(_ event: AuditEvent) {
        events[event.kind, default: 0] += 1
        if event.kind == .chainRevoked, case .string(let text)? = event.detail["reason"], let reason = RevocationReason(rawValue: text) {
            revocations[reason, default: 0] += 1
        }
        if event.kind == .stepUpFailed, case .string(let code)? = event.detail["reason"] {
            stepUpFailures[code, default: 0] += 1
        }
    }
}
