import BatonCore
import BatonStorage

/// The rows the operations read and write, inside one transaction of one store: the whole of
/// what `LineageOperations` needs from a database, and all that a store implements for it.
///
/// SQLite implements it on the group-commit writer's connection (writes) or a WAL reader
/// (reads); PostgreSQL on one pooled connection inside `BEGIN … COMMIT` (writes) or in
/// autocommit (reads). `forUpdate` asks for the row lock that serializes decisions about a row
/// across processes (PostgreSQL's `FOR UPDATE`); SQLite's single writer serializes every write
/// already, so it reads the row and takes no lock.
///
/// Nothing here decides anything: each method is one statement (or a few with one purpose),
/// and every decision is the caller's (`Rules`, through `LineageOperations`).
package protocol StoreTransaction {
    /// The store's own error (SQLite's result code, PostgreSQL's message); the store turns it
    /// into `BatonError.unavailable` where the transaction ends.
    associatedtype Failure: Error

    // MARK: Identity providers (docs/identity.md)

    /// The configured issuer whose `iss` is exactly `issuer`, or nil.
    func identityIssuer(issuer: String) throws(Failure) -> IdentityIssuerRecord?
    /// Every configured issuer, by name.
    func identityIssuers() throws(Failure) -> [IdentityIssuerRecord]
    /// Adds an issuer; false when its name or `iss` is taken.
    func insertIdentityIssuer(_ record: IdentityIssuerRecord) throws(Failure) -> Bool
    /// Removes the issuer `name` (its links stay); false when there is none.
    func deleteIdentityIssuer(named name: String) throws(Failure) -> Bool
    /// The account the identity is linked to, or nil.
    func linkedUser(issuer: String, subject: String) throws(Failure) -> Int64?
    /// Links an identity to an account; false when the identity is linked already.
    func insertIdentityLink(issuer: String, subject: String, userID: Int64, now: Instant) throws(Failure) -> Bool
    /// Unlinks an identity; false when it was not linked.
    func deleteIdentityLink(issuer: String, subject: String) throws(Failure) -> Bool
    /// The links of `userID` (every link when nil), by issuer and subject.
    func identityLinks(ofUser userID: Int64?) throws(Failure) -> [IdentityLink]

    // MARK: Chains

    /// The chain `id` with its user's name, or nil (forged id, or pruned).
    func chain(_ id: ChainID, forUpdate: Bool) throws(Failure) -> ChainRecord?
    /// The lineage rows stored for `chain` at `generation`: the tokens that left head state there.
    func lineageRows(of chain: ChainID, generation: Int) throws(Failure) -> [LineageRow]
    /// The ids of the user's chains not yet revoked, oldest first.
    func unrevokedChainIDs(ofUser userID: Int64) throws(Failure) -> [ChainID]
    /// Up to `limit` ids of chains not yet revoked and created at or before `createdBy`, by id.
    func unrevokedChainIDs(createdBy: Instant, limit: Int) throws(Failure) -> [ChainID]
    /// How many chains are not yet revoked, whatever their age.
    func unrevokedChainCount() throws(Failure) -> Int
    /// The device name and last use of `chain`, from its row alone (schema version 9): however
    /// many audit events a flood added for the chain, one row is read.
    func sessionActivity(of chain: ChainID) throws(Failure) -> SessionActivity
    /// Keeps a use of `chain` (a login, exchange, lost-response retry or step-up) on its row:
    /// `last_used_*` become `now` and `context`'s address and User-Agent. Called by `record`
    /// only, with the use's audit event.
    func markUsed(_ chain: ChainID, context: RequestContext, now: Instant) throws(Failure)
    /// Inserts a new chain with its generation-0 head; false when `chain.id` is taken (draw another).
    func insertChain(_ chain: NewChain) throws(Failure) -> Bool
    /// Makes `head` the chain's head (not presented), as of `now`.
    func installHead(_ head: HeadUpdate, of chain: ChainID, now: Instant) throws(Failure)
    /// Writes the lineage row of `chain`'s head as it leaves head state (`end`: `exchanged` or `replaced`).
    func insertLineage(of chain: ChainHead, end: String, context: RequestContext, now: Instant) throws(Failure)
    /// Marks the chain's head presented (R3a).
    func markHeadPresented(_ chain: ChainID) throws(Failure)
    /// Revokes the chain unless it already is; true when this call revoked it.
    func markRevoked(_ chain: ChainID, reason: RevocationReason, now: Instant) throws(Failure) -> Bool
    /// Sets the chain's count of consecutive wrong confirmations.
    func setConfirmFailures(_ chain: ChainID, _ failures: Int) throws(Failure)
    /// A successful confirmation: `auth_time` now, the failure count back to 0.
    func markConfirmed(_ chain: ChainID, now: Instant) throws(Failure)

    // MARK: Users

    /// The account named `username` (names are case-insensitive), or nil.
    func user(named username: String, forUpdate: Bool) throws(Failure) -> UserRecord?
    /// The account `id`, or nil.
    func user(id: Int64, forUpdate: Bool) throws(Failure) -> UserRecord?
    /// Takes the row locks of the users owning `chains`, in id order (PostgreSQL's lock order:
    /// users before chains); nothing on SQLite.
    func lockUsers(owning chains: [ChainID]) throws(Failure)
    /// Inserts an account; nil when the name is taken (case-insensitively).
    func insertUser(_ username: String, passwordHash: String, now: Instant) throws(Failure) -> Int64?
    /// Sets the user's password hash and `password_changed_at`.
    func setPasswordHash(ofUser userID: Int64, _ hash: String, now: Instant) throws(Failure)
    /// Disables or re-enables the user; false when it already was in that state.
    func setDisabled(_ userID: Int64, _ disabled: Bool, now: Instant) throws(Failure) -> Bool

    // MARK: Pruning

    /// What `pruneBatch` would delete now, counted in one snapshot, and the chains it keeps
    /// for their security events (`keptChains`, 0 with `includeSecurityEvents`).
    func pruneCounts(_ bounds: PruneBounds, includeSecurityEvents: Bool) throws(Failure) -> PruneResult
    /// Deletes up to `limit` chains that ended before `bounds`, with their lineage rows and audit
    /// events (chains with a security event kept unless `includeSecurityEvents`); `selected` is
    /// how many chains it took up, so fewer than `limit` means none is left. Safe to run from
    /// several processes at once: each chain is deleted by one of them.
    func pruneBatch(_ bounds: PruneBounds, includeSecurityEvents: Bool, limit: Int) throws(Failure) -> (removed: PruneResult, selected: Int)
    /// How many chains that ended before `bounds` are kept for their security events.
    func keptChainCount(_ bounds: PruneBounds) throws(Failure) -> Int

    // MARK: The token key

    /// The key fingerprint the database records, or nil.
    func recordedKeyFingerprint() throws(Failure) -> String?
    /// Records `fingerprint` as the database's key (inserted, or replacing the one recorded).
    func recordKeyFingerprint(_ fingerprint: String, replacing: Bool, now: Instant) throws(Failure)
    /// Whether the database holds any user or chain (then recording a key is audited).
    func hasUsersOrChains() throws(Failure) -> Bool

    // MARK: The token key ring (schema version 8)

    /// When the database recorded its key file's fingerprint, or nil.
    func recordedKeyTime() throws(Failure) -> Instant?
    /// Every row of the key ring, by id.
    func tokenKeys() throws(Failure) -> [TokenKeyRow]
    /// Inserts a ring row.
    func insertTokenKey(_ row: TokenKeyRow) throws(Failure)
    /// Marks key `id` retired at `now`.
    func retireTokenKey(_ id: UInt32, now: Instant) throws(Failure)
    /// Deletes the whole ring (`--new-key`: the wrapped keys are unreadable under the new key).
    func deleteTokenKeys() throws(Failure)
    /// The chains not revoked and not past their natural end (`bounds`, with `cutoff` now)
    /// whose head was made with key `id`, by id.
    func liveChainIDs(ofKey id: UInt32, _ bounds: PruneBounds) throws(Failure) -> [ChainID]
    /// How many such chains each key has (keys without any absent).
    func liveChainCounts(_ bounds: PruneBounds) throws(Failure) -> [UInt32: Int]

    // MARK: Audit

    /// Appends `event` to the audit table in this transaction (counted for metrics once committed).
    func append(_ event: AuditEvent, at now: Instant) throws(Failure)

    // MARK: Webhooks (the outbox)

    /// Records that `userID` logged in from `deviceID`; true when the user had not used it before.
    func recordDevice(_ deviceID: String, ofUser userID: Int64, now: Instant) throws(Failure) -> Bool
    /// Records a bound chain's proof (`ProofReplayClaim.digest`) until `keepUntil`, and deletes a
    /// few records expired at `now`. False when the proof is recorded already and unexpired:
    /// a replay, to whichever instance, before or after a restart.
    func recordProof(_ digest: [UInt8], keepUntil: Instant, now: Instant) throws(Failure) -> Bool
    /// Adds `event` to the outbox in this transaction, with a pending delivery for every
    /// endpoint whose types take it: both commit or roll back with the state change they report.
    func enqueue(_ event: OutboxEvent) throws(Failure)
    /// The endpoint's row (a plain read), nil when there is none.
    func endpointState(_ url: String) throws(Failure) -> EndpointState?
    /// Creates the endpoint's row unless it exists.
    func insertEndpoint(_ state: EndpointState) throws(Failure)
    /// Writes the types the endpoint takes.
    func saveEndpointTypes(_ url: String, _ types: [String]) throws(Failure)
    /// Counts an event done for the endpoint (delivered, or given up: `failed`) and records the
    /// attempt's error, if any, as its last.
    func recordAttempt(_ url: String, delivered: Int64, failed: Int64, error: String?, at now: Instant) throws(Failure)
    /// When the endpoint's next pending event of the lane (`alert`) is due, nil when none is
    /// pending. One index lookup: what an idle delivery thread asks every poll.
    func nextDue(_ url: String, alert: Bool) throws(Failure) -> Instant?
    /// The endpoint's first event of the lane due at `now` (fresh ones first, then by due time),
    /// leased to `leaseID` until `leaseUntil`; nil when none is due (or, on PostgreSQL, every
    /// due one is being claimed by another instance: skipped, never waited for).
    func claimDue(_ url: String, alert: Bool, now: Instant, leaseID: String, leaseUntil: Instant) throws(Failure) -> PendingDelivery?
    /// The pending delivery of `eventID` to `url`, under its row lock (waiting for another
    /// holder on PostgreSQL), nil when it is done.
    func pendingDelivery(_ url: String, eventID: Int64) throws(Failure) -> PendingDelivery?
    /// Writes a failed event's next attempt (`RetryPolicy.pending(after:)`) back.
    func saveDelivery(_ pending: PendingDelivery) throws(Failure)
    /// Deletes a pending delivery: the event is done for that endpoint.
    func deleteDelivery(_ url: String, eventID: Int64) throws(Failure)
    /// Queues again, fresh, every event at or after `instant` of the types `url` (every endpoint
    /// when nil) takes; an event already pending keeps its state. Returns the endpoints matched.
    func queueAgain(since instant: Instant, url: String?) throws(Failure) -> Int
    /// Every endpoint's state with its pending and retrying counts, by URL.
    func endpointStatuses() throws(Failure) -> [WebhookEndpointStatus]
    /// Deletes up to `limit` outbox events from before `cutoff` that no endpoint still has to
    /// send (no pending delivery), in id order; returns how many. `limit` nil only counts them
    /// and deletes nothing.
    func pruneOutbox(before cutoff: Instant, limit: Int?) throws(Failure) -> Int
    /// Deletes the endpoint's row and its pending deliveries; false when there was no row.
    func deleteEndpoint(_ url: String) throws(Failure) -> Bool
}

extension StoreTransaction {
    /// Appends `event` to the audit table and, when it is one a webhook reports, its webhook
    /// events to the outbox, in this transaction: the one place the outbox is written from
    /// an audit event, so no operation can report a change without it or the other way round.
    /// A use of a chain (`SessionActivity.useKinds`) is kept on the chain's row here too, with
    /// the event's time, address and User-Agent: no writer of a use can leave "last used" behind.
    /// `useMarked`: the caller's own UPDATE of the chain's row already set its last use
    /// (an exchange's new head, `HeadUpdate.usedFrom`).
    package func record(_ event: AuditEvent, at now: Instant, useMarked: Bool = false) throws(Failure) {
        try append(event, at: now)
        if !useMarked, let chain = event.chainID, SessionActivity.useKinds.contains(event.kind) {
            try markUsed(chain, context: event.context, now: now)
        }
        for outgoing in OutboxEvent.events(for: event, at: now) { try enqueue(outgoing) }
    }

    /// The user `id`'s row, or nil, under the row lock: whatever locks several rows of one user
    /// takes this first, then chain rows, so no two operations wait on each other in a cycle.
    /// - Returns: whether the user exists.
    @discardableResult
    package func lockUser(_ id: Int64) throws(Failure) -> Bool {
        try user(id: id, forUpdate: true) != nil
    }

    /// Where `token` stands in `chain`: the head, or a lineage row at its generation (read only then).
    package func standing(of token: PresentedToken, in chain: ChainHead) throws(Failure) -> Standing {
        if token.generation == chain.generation, token.hash.matches(chain.hash) { return .head }
        guard token.generation <= chain.generation else { return .unknown }
        let rows = try lineageRows(of: chain.id, generation: token.generation)
        return Rules.standing(of: token, in: chain, sameGeneration: rows)
    }

    /// Every chain of the user not yet revoked, oldest first (row-locked with `forUpdate`),
    /// whatever its age: what a user-wide revocation ends (docs/security.md, finding 1).
    package func unrevokedChains(ofUser userID: Int64, forUpdate: Bool) throws(Failure) -> [ChainHead] {
        var chains: [ChainHead] = []
        for id in try unrevokedChainIDs(ofUser: userID) {
            if let record = try chain(id, forUpdate: forUpdate) { chains.append(record.head) }
        }
        return chains
    }
}
