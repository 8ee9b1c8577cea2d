import BatonCore
import BatonStorage

extension LineageBackend {
    /// The configured issuer whose `iss` is exactly `issuer`, or nil (read per token exchange:
    /// an `issuer add` or `remove` on any instance holds on every instance at once).
    package func identityIssuer(issuer: String) throws(BatonError) -> IdentityIssuerRecord? {
        try read { transaction throws(Transaction.Failure) in try transaction.identityIssuer(issuer: issuer) }
    }

    /// R1 through an identity provider (RFC 8693 token exchange, docs/identity.md): marks the
    /// validated subject token used, finds the account linked to its identity (or makes one,
    /// when the issuer creates accounts), and creates a chain bound to the proof's key, with
    /// R7 applied, audited and announced exactly as a password login. The chain's `auth_time`
    /// is the provider's `auth_time` (none given: `unknownAuthTime`, never recent), so step-up
    /// asks for a fresh authentication exactly when the provider's is old or unknown.
    /// - Throws: invalid_grant (replayed token, identity not linked), account_disabled,
    ///   invalid_request (device fields), unavailable.
    package func login(identity request: IdentityLoginRequest, context: RequestContext = RequestContext()) throws(BatonError) -> TokenBundle {
        try LoginRequest.validateIdentifier(request.deviceID, named: "device_id")
        if let deviceName = request.deviceName { try LoginRequest.validateIdentifier(deviceName, named: "device_name") }
        var context = context
        context.deviceID = request.deviceID
        if let refusal = Self.replayRefusal(context.replayClaim) { throw refusal }
        let codec = mintingCodec()
        let detail: [String: JSONValue] = ["method": .string("token_exchange"), "issuer": .string(request.issuer)]
        // An identity no account is linked to, at an issuer that makes none: refused after a
        // read, before any write (a valid token sent again and again costs no commit).
        let linkedBefore = try read { transaction throws(Transaction.Failure) in
            try transaction.linkedUser(issuer: request.issuer, subject: request.subject)
        }
        guard linkedBefore != nil || request.createsUsers else { throw Self.notLinked }
        return try write { [self] transaction throws(Transaction.Failure) -> Result<TokenBundle, BatonError> in
            let now = clock.now()
            let linked = try transaction.linkedUser(issuer: request.issuer, subject: request.subject)
            guard linked != nil || request.createsUsers else { return .failure(Self.notLinked) }  // unlinked meanwhile
            // The token counts as used only once it is accepted: a refusal above leaves it as it
            // was. A replay is refused without a write of its own (the access log has it).
            for digest in request.replayDigests where !(try transaction.recordProof(digest, keepUntil: request.keepUntil, now: now)) {
                return .failure(.invalidGrant(failure: "replayed", description: "The subject token was already exchanged."))
            }
            var userID: Int64
            if let linked {
                userID = linked
            } else {
                let username = request.createdUsername
                if let id = try transaction.insertUser(username, passwordHash: Self.noPassword, now: now),
                   try transaction.insertIdentityLink(issuer: request.issuer, subject: request.subject, userID: id, now: now) {
                    try transaction.record(AuditEvent(kind: .userCreated, userID: id, username: username, context: context, detail: detail), at: now)
                    userID = id
                } else if let winner = try transaction.linkedUser(issuer: request.issuer, subject: request.subject) {
                    // Another first login of this identity (another device, at the same moment on
                    // another instance) made the account and link first: this login joins it.
                    userID = winner
                } else {
                    return .failure(.userExists(username))
                }
            }
            guard let user = try transaction.user(id: userID, forUpdate: true) else {
                return .failure(.invalidGrant(failure: "identity_not_linked", description: "No account is linked to this identity."))
            }
            if user.isDisabled {
                try transaction.record(AuditEvent(kind: .loginFailed, userID: user.id, username: user.username, context: context,
                                                  detail: detail.merging(["reason": .string("account_disabled")]) { $1 }), at: now)
                return .failure(.accountDisabled)
            }
            let login = LoginRequest(username: user.username, password: "", deviceID: request.deviceID, deviceClass: request.deviceClass,
                                     deviceName: request.deviceName, proofKey: request.proofKey)
            let bundle = try startChain(for: login, userID: user.id, username: user.username, detail: detail, codec: codec,
                                        context: context, now: now, in: transaction)
            // The provider's authentication time, or, when the token does not give one, none that
            // counts as recent (a step-up asks for one: RFC 9470 `max_age`).
            let authTime = request.authTime ?? Self.unknownAuthTime
            if authTime < now { try transaction.markConfirmed(bundle.chainID, now: authTime) }
            return .success(bundle)
        }.get()
    }

    static var notLinked: BatonError {
        .invalidGrant(failure: "identity_not_linked", description: "No account is linked to this identity; ask the operator to link it.")
    }

    /// A chain's `auth_time` when the provider's token did not say when the user authenticated:
    /// the epoch, which no `max_age` accepts.
    package static var unknownAuthTime: Instant { Instant(milliseconds: 0) }

    /// The stored password of an account made by an identity provider: not an argon2id string,
    /// so no password matches it (`PasswordHasher.verify`, after the same work as any other);
    /// `baton admin user passwd` can give the account one.
    package static var noPassword: String { "!identity-provider" }

    // MARK: Administration (`baton admin issuer …`, `baton admin identity …`)

    /// Adds an issuer (the row keeps its creation time; `baton admin` prints what it did).
    /// - Throws: `.invalidArgument` when its name or `iss` is taken.
    package func addIdentityIssuer(_ record: IdentityIssuerRecord) throws(BatonError) {
        let added = try write { transaction throws(Transaction.Failure) in try transaction.insertIdentityIssuer(record) }
        guard added else { throw .invalidArgument("an issuer named '\(record.name)' or with issuer \(record.issuer) is configured already") }
    }

    /// Every configured issuer, by name.
    package func identityIssuers() throws(BatonError) -> [IdentityIssuerRecord] {
        try read { transaction throws(Transaction.Failure) in try transaction.identityIssuers() }
    }

    /// Removes an issuer (its links stay, for when it is added again).
    /// - Throws: `.invalidArgument` when there is none of that name.
    package func removeIdentityIssuer(named name: String) throws(BatonError) {
        let removed = try write { transaction throws(Transaction.Failure) in try transaction.deleteIdentityIssuer(named: name) }
        guard removed else { throw .invalidArgument("no issuer named '\(name)' (baton admin issuer list)") }
    }

    /// Links the identity (`issuer`'s `iss`, `subject`) to the account `username`.
    /// - Throws: `.userNotFound`; `.invalidArgument` when the identity is linked already.
    package func linkIdentity(issuer: String, subject: String, to username: String) throws(BatonError) {
        let result = try write { [clock] transaction throws(Transaction.Failure) -> Result<Void, BatonError> in
            guard let user = try transaction.user(named: username, forUpdate: true) else { return .failure(.userNotFound(username)) }
            if let other = try transaction.linkedUser(issuer: issuer, subject: subject) {
                let owner = try transaction.user(id: other, forUpdate: false)?.username ?? String(other)
                return .failure(.invalidArgument("the identity is linked to '\(owner)' already (baton admin identity unlink first)"))
            }
            _ = try transaction.insertIdentityLink(issuer: issuer, subject: subject, userID: user.id, now: clock.now())
            return .success(())
        }
        try result.get()
    }

    /// Unlinks an identity. Its account's sessions are left alone (revoke them separately).
    /// - Throws: `.invalidArgument` when the identity is not linked.
    package func unlinkIdentity(issuer: String, subject: String) throws(BatonError) {
        let removed = try write { transaction throws(Transaction.Failure) in try transaction.deleteIdentityLink(issuer: issuer, subject: subject) }
        guard removed else { throw .invalidArgument("--issuer and --subject name no linked identity (baton admin identity list)") }
    }

    /// The identities linked to `username`'s account (every link when nil).
    /// - Throws: `.userNotFound`.
    package func identityLinks(ofUser username: String?) throws(BatonError) -> [IdentityLink] {
        let result = try read { transaction throws(Transaction.Failure) -> Result<[IdentityLink], BatonError> in
            guard let username else { return .success(try transaction.identityLinks(ofUser: nil)) }
            guard let user = try transaction.user(named: username, forUpdate: false) else { return .failure(.userNotFound(username)) }
            return .success(try transaction.identityLinks(ofUser: user.id))
        }
        return try result.get()
    }
}
