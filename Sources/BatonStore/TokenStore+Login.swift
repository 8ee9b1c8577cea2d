import BatonCore
import BatonStorage

extension TokenStore {
    /// Longest username, device id and device name accepted, in bytes.
    package static let maxFieldLength = LoginRequest.maxFieldLength

    /// R1: checks the password and creates a chain with its generation-0 token, applying
    /// R7 (eviction beyond the per-user limit, one chain per device class).
    ///
    /// Unknown users and wrong passwords cost the same argon2id work and give the same
    /// `invalid_credentials`; `account_disabled` is only said after a correct password.
    /// - Throws: invalid_credentials, account_disabled, too_many_attempts, invalid_request, unavailable.
    package func login(_ request: LoginRequest, context: RequestContext = RequestContext()) throws(BatonError) -> TokenBundle {
        try request.validate()
        var context = context
        context.deviceID = request.deviceID
        let now = clock.now()
        if let wait = throttle.withLock({ $0.retryAfter(username: request.username, ip: context.ip, now: now) }) {
            let seconds = wait.wholeSecondsRoundedUp
            try audit(AuditEvent(kind: .loginThrottled, username: request.username, context: context,
                                 detail: ["retry_after": .int(seconds)]))
            throw .tooManyAttempts(retryAfterSeconds: seconds)
        }
        let user = try read { connection throws(SQLiteError) in
            try connection.statement("SELECT id, username, password_hash, disabled_at FROM users WHERE username = ?")
                .first([.text(request.username)]) { (id: $0.int(0), name: $0.text(1), hash: $0.text(2), disabled: !$0.isNull(3)) }
        }
        guard try hasher.verify(request.password, against: user?.hash, for: HashClaimant(address: context.ip)), let user else {
            throttle.withLock { $0.recordFailure(username: request.username, ip: context.ip, now: clock.now()) }
            try audit(AuditEvent(kind: .loginFailed, userID: user?.id, username: request.username, context: context,
                                 detail: ["reason": .string("invalid_credentials")]))
            throw .invalidCredentials
        }
        let result = try write { [self] connection throws(SQLiteError) -> Result<TokenBundle, BatonError> in
            let now = clock.now()
            // Re-read on the writer: the password or the account may have changed meanwhile.
            let current = try connection.statement("SELECT password_hash, disabled_at FROM users WHERE id = ?")
                .first([.int(user.id)]) { (hash: $0.text(0), disabled: !$0.isNull(1)) }
            guard let current, current.hash == user.hash else { return .failure(.invalidCredentials) }
            if current.disabled {
                try AuditLog.append(AuditEvent(kind: .loginFailed, userID: user.id, username: user.name, context: context,
                                               detail: ["reason": .string("account_disabled")]), at: now, on: connection)
                return .failure(.accountDisabled)
            }
            try applyDevicePolicy(userID: user.id, username: user.name, deviceClass: request.deviceClass, context: context, now: now, on: connection)
            let bundle = try createChain(for: request, userID: user.id, now: now, on: connection)
            try AuditLog.append(
                AuditEvent(kind: .loginSucceeded, userID: user.id, username: user.name, chainID: bundle.chainID,
                           generation: 0, context: context,
                           detail: ["device_class": .string(request.deviceClass.rawValue), "device_name": .optional(request.deviceName)]),
                at: now, on: connection)
            return .success(bundle)
        }
        let bundle = try result.get()
        // Only a login that committed makes its address known to the account: a right password
        // for a disabled account, or one changed meanwhile, earns nothing (docs/security.md).
        throttle.withLock { $0.recordSuccess(username: request.username, ip: context.ip) }
        return bundle
    }

    /// Writes one audit event in its own (batched, durable) transaction.
    func audit(_ event: AuditEvent) throws(BatonError) {
        try write { [self] connection throws(SQLiteError) in try AuditLog.append(event, at: clock.now(), on: connection) }
    }

    /// R7: revoke what the new login displaces, before it is created.
    private func applyDevicePolicy(userID: Int64, username: String, deviceClass: DeviceClass, context: RequestContext, now: Instant, on connection: Connection) throws(SQLiteError) {
        guard policy.maxChainsPerUser > 0 || policy.oneChainPerDeviceClass else { return }
        let live = try liveChains(ofUser: userID, now: now, on: connection)
        let doomed = Rules.chainsToRevokeForLogin(live: live.map { ($0.id, $0.deviceClass) }, deviceClass: deviceClass, policy)
        for (id, reason) in doomed {
            guard let chain = live.first(where: { $0.id == id }) else { continue }
            try revoke(chain, username: username, reason: reason, context: context, now: now, on: connection)
        }
    }

    /// The user's live chains, oldest first.
    func liveChains(ofUser userID: Int64, now: Instant, on connection: Connection) throws(SQLiteError) -> [ChainHead] {
        try unrevokedChains(ofUser: userID, on: connection).filter { $0.isLive(at: now, policy) }
    }

    /// Every chain of the user not yet revoked, oldest first, whether or not it has expired
    /// by this process's policy: what a user-wide revocation ends (docs/security.md, finding 1).
    func unrevokedChains(ofUser userID: Int64, on connection: Connection) throws(SQLiteError) -> [ChainHead] {
        let ids = try connection.statement(
            "SELECT id FROM chains WHERE user_id = ? AND revoked_at IS NULL ORDER BY created_at, id"
        ).all([.int(userID)]) { ChainID(rawValue: $0.int(0)) }
        var chains: [ChainHead] = []
        for id in ids { if let record = try ChainRecord.load(id, on: connection) { chains.append(record.head) } }
        return chains
    }

    private func createChain(for request: LoginRequest, userID: Int64, now: Instant, on connection: Connection) throws(SQLiteError) -> TokenBundle {
        while true {
            let id = ChainID.random()
            let issued = codec!.issue(chainID: id, generation: 0)
            let chain = ChainHead(id: id, userID: userID, deviceID: request.deviceID, deviceClass: request.deviceClass,
                                  createdAt: now, generation: 0, hash: issued.hash.bytes, issuedAt: now,
                                  expiresAt: now, presented: false, revocation: nil)
            let expiresAt = min(now + policy.tokenTTL, chain.sessionEnd(policy))
            do throws(SQLiteError) {
                try connection.statement("""
                    INSERT INTO chains (id, user_id, device_id, device_class, device_name, created_at, head_generation,
                                        head_hash, head_issued_at, head_expires_at, auth_time)
                    VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)
                    """).execute([
                        .int(id.rawValue), .int(userID), .text(request.deviceID), .text(request.deviceClass.rawValue),
                        .optional(request.deviceName), .int(now.milliseconds), .blob(issued.hash.bytes),
                        .int(now.milliseconds), .int(expiresAt.milliseconds), .int(now.milliseconds),  // R1: the login authenticates
                    ])
            } catch where error.isUniqueViolation {
                continue  // a 63-bit id collided: draw another
            }
            return bundle(issued, chain: chain, expiresAt: expiresAt, now: now)
        }
    }
}
