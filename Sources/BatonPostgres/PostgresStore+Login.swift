import BatonCore
import BatonStorage

extension PostgresStore {
    /// R1: checks the password and creates a chain with its generation-0 token, applying R7.
    /// Same answers as the SQLite store: unknown users and wrong passwords cost the same
    /// argon2id work and give the same `invalid_credentials`. The throttle is this instance's.
    package func login(_ request: LoginRequest, context: RequestContext = RequestContext()) throws(BatonError) -> TokenBundle {
        try request.validate()
        var context = context
        context.deviceID = request.deviceID
        let now = clock.now()
        if let wait = throttle.withLock({ $0.retryAfter(username: request.username, ip: context.ip, now: now) }) {
            let seconds = wait.wholeSecondsRoundedUp
            try audit(AuditEvent(kind: .loginThrottled, username: request.username, context: context, detail: ["retry_after": .int(seconds)]))
            throw .tooManyAttempts(retryAfterSeconds: seconds)
        }
        let user = try read { transaction throws(PostgresError) in
            try transaction.query("SELECT id, username, password_hash FROM users WHERE lower(username) = lower($1)", [request.username]).first
                .map { (id: Int64($0[0] ?? "") ?? 0, name: $0[1] ?? "", hash: $0[2] ?? "") }
        }
        guard try hasher.verify(request.password, against: user?.hash, for: HashClaimant(address: context.ip)), let user else {
            throttle.withLock { $0.recordFailure(username: request.username, ip: context.ip, now: clock.now()) }
            try audit(AuditEvent(kind: .loginFailed, userID: user?.id, username: request.username, context: context,
                                 detail: ["reason": .string("invalid_credentials")]))
            throw .invalidCredentials
        }
        let result = try transaction { [self] transaction throws(PostgresError) -> Result<TokenBundle, BatonError> in
            let now = clock.now()
            // Re-read under the user's row lock: the password or the account may have changed meanwhile,
            // and two logins of one user apply R7 one at a time.
            let current = try transaction.query("SELECT password_hash, disabled_at FROM users WHERE id = $1 FOR UPDATE", [String(user.id)]).first
            guard let current, current[0] == user.hash else { return .failure(.invalidCredentials) }
            if current[1] != nil {
                try transaction.append(AuditEvent(kind: .loginFailed, userID: user.id, username: user.name, context: context,
                                                  detail: ["reason": .string("account_disabled")]), at: now)
                return .failure(.accountDisabled)
            }
            try applyDevicePolicy(userID: user.id, username: user.name, deviceClass: request.deviceClass, context: context, now: now, in: transaction)
            let bundle = try createChain(for: request, userID: user.id, now: now, in: transaction)
            try transaction.append(
                AuditEvent(kind: .loginSucceeded, userID: user.id, username: user.name, chainID: bundle.chainID,
                           generation: 0, context: context,
                           detail: ["device_class": .string(request.deviceClass.rawValue), "device_name": .optional(request.deviceName)]),
                at: now)
            return .success(bundle)
        }
        let bundle = try result.get()
        // Only a login that committed makes its address known to the account: a right password
        // for a disabled account, or one changed meanwhile, earns nothing (docs/security.md).
        throttle.withLock { $0.recordSuccess(username: request.username, ip: context.ip) }
        return bundle
    }

    /// Creates an account. Audits `user_created`.
    /// - Throws: `.userExists`, `.invalidArgument` (name).
    @discardableResult
    package func createUser(_ username: String, password: String, context: RequestContext = .admin) throws(BatonError) -> Int64 {
        try LoginRequest.validateUsername(username)
        let hash = try hasher.hash(password)
        let result = try transaction { [self] transaction throws(PostgresError) -> Result<Int64, BatonError> in
            let now = clock.now()
            let inserted = try transaction.query("""
                INSERT INTO users (username, password_hash, created_at, password_changed_at) VALUES ($1, $2, $3, $3)
                ON CONFLICT ((lower(username))) DO NOTHING RETURNING id
                """, [username, hash, String(now.milliseconds)])
            guard let id = inserted.first?[0].flatMap(Int64.init) else {
                let stored = try transaction.query("SELECT username FROM users WHERE lower(username) = lower($1)", [username]).first?[0]
                return .failure(.userExists(stored ?? username))
            }
            try transaction.append(AuditEvent(kind: .userCreated, userID: id, username: username, context: context), at: now)
            return .success(id)
        }
        return try result.get()
    }

    /// Writes one audit event in its own transaction.
    func audit(_ event: AuditEvent) throws(BatonError) {
        try transaction { [self] transaction throws(PostgresError) in try transaction.append(event, at: clock.now()) }
    }

    /// R7: revoke what the new login displaces, before it is created.
    private func applyDevicePolicy(userID: Int64, username: String, deviceClass: DeviceClass, context: RequestContext, now: Instant, in transaction: Transaction) throws(PostgresError) {
        guard policy.maxChainsPerUser > 0 || policy.oneChainPerDeviceClass else { return }
        let live = try liveChains(ofUser: userID, now: now, in: transaction)
        let doomed = Rules.chainsToRevokeForLogin(live: live.map { ($0.id, $0.deviceClass) }, deviceClass: deviceClass, policy)
        for (id, reason) in doomed {
            guard let chain = live.first(where: { $0.id == id }) else { continue }
            try revoke(chain, username: username, reason: reason, context: context, now: now, in: transaction)
        }
    }

    private func createChain(for request: LoginRequest, userID: Int64, now: Instant, in transaction: Transaction) throws(PostgresError) -> TokenBundle {
        while true {
            let id = ChainID.random()
            let issued = codec!.issue(chainID: id, generation: 0)
            let chain = ChainHead(id: id, userID: userID, deviceID: request.deviceID, deviceClass: request.deviceClass,
                                  createdAt: now, generation: 0, hash: issued.hash.bytes, issuedAt: now,
                                  expiresAt: now, presented: false, revocation: nil)
            let expiresAt = min(now + policy.tokenTTL, chain.sessionEnd(policy))
            let inserted = try transaction.query("""
                INSERT INTO chains (id, user_id, device_id, device_class, device_name, created_at, head_generation,
                                    head_hash, head_issued_at, head_expires_at, auth_time)
                VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $6, $8, $6)
                ON CONFLICT (id) DO NOTHING RETURNING id
                """, [String(id.rawValue), String(userID), request.deviceID, request.deviceClass.rawValue, request.deviceName,
                      String(now.milliseconds), ByteaText.encode(issued.hash.bytes), String(expiresAt.milliseconds)])
            guard !inserted.isEmpty else { continue }  // a 63-bit id collided: draw another
            return bundle(issued, chain: chain, expiresAt: expiresAt, now: now)
        }
    }
}
