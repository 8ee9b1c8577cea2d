import BatonCore
import BatonStorage

extension LineageBackend {
    /// R1: checks the password and creates a chain with its generation-0 token, applying
    /// R7 (eviction beyond the per-user limit, one chain per device class).
    ///
    /// Unknown users and wrong passwords cost the same argon2id work and give the same
    /// `invalid_credentials`; `account_disabled` is only said after a correct password. The
    /// throttle is this process's (each instance keeps its own).
    /// - Throws: invalid_credentials, account_disabled, too_many_attempts, invalid_request, unavailable.
    package func login(_ request: LoginRequest, context: RequestContext = RequestContext()) throws(BatonError) -> TokenBundle {
        try request.validate()
        var context = context
        context.deviceID = request.deviceID
        let now = clock.now()
        if let wait = limits.throttle.withLock({ $0.retryAfter(username: request.username, ip: context.ip, now: now) }) {
            let seconds = wait.wholeSecondsRoundedUp
            try audit(AuditEvent(kind: .loginThrottled, username: request.username, context: context, detail: ["retry_after": .int(seconds)]))
            throw .tooManyAttempts(retryAfterSeconds: seconds)
        }
        let user = try read { transaction throws(Transaction.Failure) in try transaction.user(named: request.username, forUpdate: false) }
        guard try hasher.verify(request.password, against: user?.passwordHash, for: HashClaimant(address: context.ip)), let user else {
            limits.throttle.withLock { $0.recordFailure(username: request.username, ip: context.ip, now: clock.now()) }
            try audit(AuditEvent(kind: .loginFailed, userID: user?.id, username: request.username, context: context,
                                 detail: ["reason": .string("invalid_credentials")]))
            throw .invalidCredentials
        }
        // A bound login's proof takes its place in the replay cache only now (docs/dpop.md).
        if let refusal = Self.replayRefusal(context.replayClaim) { throw refusal }
        let codec = mintingCodec()  // read outside the transaction: a ring reload never waits on it
        let result = try write { [self] transaction throws(Transaction.Failure) -> Result<TokenBundle, BatonError> in
            // Re-read under the user's row lock: the password or the account may have changed
            // meanwhile, and two logins of one user apply R7 one at a time.
            let current = try transaction.user(id: user.id, forUpdate: true)
            let now = clock.now()
            guard let current, current.passwordHash == user.passwordHash else { return .failure(.invalidCredentials) }
            if current.isDisabled {
                try transaction.record(AuditEvent(kind: .loginFailed, userID: user.id, username: user.username, context: context,
                                                  detail: ["reason": .string("account_disabled")]), at: now)
                return .failure(.accountDisabled)
            }
            return .success(try startChain(for: request, userID: user.id, username: user.username, codec: codec, context: context,
                                           now: now, in: transaction))
        }
        let bundle = try result.get()
        // Only a login that committed makes its address known to the account: a right password
        // for a disabled account, or one changed meanwhile, earns nothing (docs/security.md).
        limits.throttle.withLock { $0.recordSuccess(username: request.username, ip: context.ip) }
        return bundle
    }

    /// What every login does once its user may log in (a password login, and a login through
    /// an identity provider, `login(identity:)`): R7, the chain with its generation-0 token,
    /// `login_succeeded` (with `detail` added to the device's), and a new device's webhook.
    func startChain(
        for request: LoginRequest, userID: Int64, username: String, detail extra: [String: JSONValue] = [:], codec: TokenCodec,
        context: RequestContext, now: Instant, in transaction: Transaction
    ) throws(Transaction.Failure) -> TokenBundle {
        try applyDevicePolicy(userID: userID, username: username, deviceClass: request.deviceClass, context: context, now: now, in: transaction)
        let bundle = try createChain(for: request, userID: userID, codec: codec, now: now, in: transaction)
        var detail: [String: JSONValue] = ["device_class": .string(request.deviceClass.rawValue), "device_name": .optional(request.deviceName)]
        if let jkt = request.proofKey { detail["jkt"] = .string(jkt) }  // bound chains only: bearer logins read as before
        detail.merge(extra) { $1 }
        try transaction.record(
            AuditEvent(kind: .loginSucceeded, userID: userID, username: username, chainID: bundle.chainID,
                       generation: 0, context: context, detail: detail),
            at: now)
        if try transaction.recordDevice(request.deviceID, ofUser: userID, now: now) {
            try transaction.enqueue(.newDeviceLogin(userID: userID, username: username, chainID: bundle.chainID,
                                                    deviceClass: request.deviceClass, deviceName: request.deviceName,
                                                    context: context, at: now))
        }
        return bundle
    }

    /// R7: revokes what the new login displaces, before it is created.
    private func applyDevicePolicy(
        userID: Int64, username: String, deviceClass: DeviceClass, context: RequestContext, now: Instant, in transaction: Transaction
    ) throws(Transaction.Failure) {
        guard policy.maxChainsPerUser > 0 || policy.oneChainPerDeviceClass else { return }
        let live = try transaction.unrevokedChains(ofUser: userID, forUpdate: true).filter { $0.isLive(at: now, policy) }
        let doomed = Rules.chainsToRevokeForLogin(live: live.map { ($0.id, $0.deviceClass) }, deviceClass: deviceClass, policy)
        for (id, reason) in doomed {
            guard let chain = live.first(where: { $0.id == id }) else { continue }
            try revoke(chain, username: username, reason: reason, context: context, now: now, in: transaction)
        }
    }

    private func createChain(
        for request: LoginRequest, userID: Int64, codec: TokenCodec, now: Instant, in transaction: Transaction
    ) throws(Transaction.Failure) -> TokenBundle {
        while true {
            let id = ChainID.random()
            let issued = codec.issue(chainID: id, generation: 0)
            let chain = ChainHead(id: id, userID: userID, deviceID: request.deviceID, deviceClass: request.deviceClass,
                                  createdAt: now, generation: 0, hash: issued.hash.bytes, issuedAt: now,
                                  expiresAt: now, presented: false, revocation: nil, jkt: request.proofKey)
            let expiresAt = min(now + policy.tokenTTL, chain.sessionEnd(policy))
            let row = NewChain(id: id, userID: userID, deviceID: request.deviceID, deviceClass: request.deviceClass,
                               deviceName: request.deviceName, createdAt: now, headHash: issued.hash.bytes, headExpiresAt: expiresAt,
                               jkt: request.proofKey, keyID: issued.keyID)
            // A 63-bit id that collided: draw another.
            guard try transaction.insertChain(row) else { continue }
            return TokenBundle(issued: issued, chain: chain, expiresAt: expiresAt, now: now, policy: policy)
        }
    }
}
