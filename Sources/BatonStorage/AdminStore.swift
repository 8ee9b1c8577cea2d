import BatonCore

/// The store's operations as `baton admin` (and the server's pruner) use them: accounts,
/// chains, lineage, the audit trail, revocation, statistics and pruning. One protocol, two
/// implementations (`TokenStore` on SQLite, `PostgresStore`), returning the same values; each
/// owns its SQL and its locking, and neither hands a connection upward.
///
/// Operator changes are audited with `context` (normally `RequestContext.admin`). Every method
/// blocks its caller. A storage failure is `BatonError.unavailable`.
package protocol AdminStore: AnyObject, Sendable {
    /// Creates an account. Audits `user_created`; returns its id.
    /// - Throws: `.userExists`, `.invalidArgument` (name, weak password).
    func createUser(_ username: String, password: String, context: RequestContext) throws(BatonError) -> Int64
    /// Every account with its live chain count, by name.
    func users() throws(BatonError) -> [UserSummary]
    /// Sets a new password and revokes every live chain of the user (`password_changed`).
    /// - Returns: the chains revoked.
    /// - Throws: `.userNotFound`, `.invalidArgument` (weak password).
    func changePassword(_ username: String, to password: String, context: RequestContext) throws(BatonError) -> [ChainID]
    /// Disables (revoking every live chain, `user_disabled`) or re-enables an account; an
    /// account already in that state is left alone (no event, `changed` false).
    /// - Throws: `.userNotFound`.
    func setDisabled(_ username: String, _ disabled: Bool, context: RequestContext) throws(BatonError) -> AccountChange
    /// The user's live sessions, newest first, as the user sees them in "your devices".
    /// - Throws: `.userNotFound`.
    func sessions(ofUser username: String) throws(BatonError) -> [Session]
    /// Chains, newest first: live ones, or with `includeEnded` every chain.
    /// - Throws: `.userNotFound` when `username` names no user.
    func chains(ofUser username: String?, includeEnded: Bool) throws(BatonError) -> [ChainSummary]
    /// One chain's whole lineage with its incidents.
    /// - Throws: `.chainNotFound` (never existed, or pruned).
    func lineage(of id: ChainID) throws(BatonError) -> ChainLineage
    /// Revokes one chain (`admin`, with the operator's `note`); false when already revoked.
    /// - Throws: `.chainNotFound`.
    func revokeChain(_ id: ChainID, note: String?, context: RequestContext) throws(BatonError) -> Bool
    /// Revokes every live chain of a user (`admin`, with the operator's `note`).
    /// - Throws: `.userNotFound`.
    func revokeChains(ofUser username: String, note: String?, context: RequestContext) throws(BatonError) -> [ChainID]
    /// How many chains `revokeAllChains` would revoke now (every chain not yet revoked).
    func unrevokedChainCount() throws(BatonError) -> Int
    /// Revokes every chain not yet revoked that existed when the call started (`admin`, with
    /// `note` and `scope: all`), `batchSize` chains per transaction; returns how many.
    func revokeAllChains(note: String?, context: RequestContext, batchSize: Int) throws(BatonError) -> Int
    /// Audit events matching `filter`, oldest first.
    func auditEvents(_ filter: AuditFilter) throws(BatonError) -> [AuditRecord]
    /// How many audit events match `filter`, ignoring its limit.
    func auditEventCount(_ filter: AuditFilter) throws(BatonError) -> Int
    /// Counts for `baton admin stats`.
    func statistics() throws(BatonError) -> StoreStatistics
    /// Deletes chains that ended more than `retention` ago with their lineage rows and audit
    /// events, `batchSize` chains per transaction; chains with a security event (SecurityEvents)
    /// are kept unless `includeSecurityEvents`. A `dryRun` counts and deletes nothing. Safe to
    /// run from several processes at once: a chain is deleted by exactly one of them.
    func prune(olderThan retention: Duration, includeSecurityEvents: Bool, dryRun: Bool, batchSize: Int) throws(BatonError) -> PruneResult
    /// Closes every connection.
    /// Identity providers (`baton admin issuer …`, docs/identity.md).
    func addIdentityIssuer(_ record: IdentityIssuerRecord) throws(BatonError)
    func identityIssuers() throws(BatonError) -> [IdentityIssuerRecord]
    func removeIdentityIssuer(named name: String) throws(BatonError)
    /// Linked identities (`baton admin identity …`).
    func linkIdentity(issuer: String, subject: String, to username: String) throws(BatonError)
    func unlinkIdentity(issuer: String, subject: String) throws(BatonError)
    func identityLinks(ofUser username: String?) throws(BatonError) -> [IdentityLink]
    func close()
}
