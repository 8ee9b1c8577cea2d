import BatonCore

/// The security events Baton sends to webhook endpoints (docs/webhooks.md). The raw values
/// are the payload's `type`, as the Standard Webhooks specification suggests (`group.event`).
package enum WebhookEventType: String, Sendable, CaseIterable, Equatable {
    /// A login from a device id not seen before for that user.
    case newDeviceLogin = "login.new_device"
    /// R3: a consumed token presented again; the chain is revoked.
    case reuseDetected = "token.reuse_detected"
    /// R4: a token of an older generation that no head ever left; the chain is revoked.
    case forkDetected = "token.fork_detected"
    /// A chain revoked for any reason (detail `reason`, `actor`).
    case chainRevoked = "chain.revoked"
    /// The user's password was changed (by the user or an operator).
    case passwordChanged = "user.password_changed"
    /// The account was disabled.
    case userDisabled = "user.disabled"
    /// The 5th consecutive wrong password at step-up revoked the chain.
    case stepUpLockedOut = "chain.step_up_locked_out"
    /// A request for a key-bound chain without a valid proof by its key was refused (audit
    /// `proof_failed`; data `failure`, `count`: refusals coalesced per chain and window): someone
    /// holds the token but not the device's key.
    case proofRejected = "device.proof_rejected"
}

extension WebhookEventType {
    /// Whether the event is a security alert, delivered on a thread of its own ahead of bulk
    /// events: a receiver hears of a reuse, a fork or a revocation within seconds whatever else
    /// is queued (issue 28, finding 2). Bulk are the events any account holder can make by the
    /// thousand: `device.proof_rejected` (a bound chain's token with worthless proofs) and
    /// `login.new_device` (logins with made-up device ids).
    package var isAlert: Bool {
        switch self {
        case .reuseDetected, .forkDetected, .chainRevoked, .stepUpLockedOut, .passwordChanged, .userDisabled: true
        case .proofRejected, .newDeviceLogin: false
        }
    }

    /// The alert types' names as an SQL list of string literals (our own raw values).
    package static var alertTypesSQL: String { sqlStringLiterals(allCases.filter(\.isAlert).map(\.rawValue)) }
}

/// One event as the outbox holds it: the stable message id (`webhook-id`), its type, when it
/// happened, and the exact body every attempt signs and sends.
package struct OutboxEvent: Sendable, Equatable {
    /// `msg_` and 22 base64url characters (128 random bits): the `webhook-id` of every attempt.
    package var messageID: String
    package var type: WebhookEventType
    package var at: Instant
    /// `{"data":…,"timestamp":…,"type":…}`, written once so retries send identical bytes.
    package var body: String

    package init(messageID: String, type: WebhookEventType, at: Instant, body: String) {
        self.messageID = messageID
        self.type = type
        self.at = at
        self.body = body
    }

    /// A new event of `type` with `data`, and a fresh message id.
    package init(type: WebhookEventType, at: Instant, data: [String: JSONValue]) {
        let body = JSONValue.object(["type": .string(type.rawValue), "timestamp": .string(at.rfc3339Milliseconds), "data": .object(data)])
        self.init(messageID: "msg_" + Base64URL.encode(SecureRandom.bytes(16)), type: type, at: at, body: body.text)
    }
}

extension OutboxEvent {
    /// The webhook events an audit event gives rise to (none for most kinds). The data never
    /// holds a token or a hash: only who, which chain and device, from where, and why.
    package static func events(for event: AuditEvent, at now: Instant) -> [OutboxEvent] {
        var types: [WebhookEventType] = []
        switch event.kind {
        case .reuseDetected: types = [.reuseDetected]
        case .forkDetected: types = [.forkDetected]
        case .passwordChanged: types = [.passwordChanged]
        case .userDisabled: types = [.userDisabled]
        case .proofFailed where event.chainID != nil: types = [.proofRejected]
        case .chainRevoked:
            types = [.chainRevoked]
            if event.detail["reason"] == .string(RevocationReason.confirmFailed.rawValue) { types.append(.stepUpLockedOut) }
        default: return []
        }
        var data = commonData(of: event, at: now)
        if event.kind == .chainRevoked, case .string(let reason)? = event.detail["reason"] {
            data["reason"] = .string(reason)
            data["actor"] = .string(actor(ofRevocation: RevocationReason(rawValue: reason), isBulk: event.detail["scope"] != nil))
        }
        if event.kind == .proofFailed, let failure = event.detail["failure"] { data["failure"] = failure }
        if event.kind == .proofFailed, let count = event.detail["count"] { data["count"] = count }  // refusals coalesced (ProofFailureLog)
        if event.kind == .reuseDetected, let reused = event.detail["reused_generation"] { data["reused_generation"] = reused }
        return types.map { OutboxEvent(type: $0, at: now, data: data) }
    }

    /// `login.new_device`: the login that created `chainID` from a device the user had not used.
    package static func newDeviceLogin(
        userID: Int64, username: String, chainID: ChainID, deviceClass: DeviceClass, deviceName: String?,
        context: RequestContext, at now: Instant
    ) -> OutboxEvent {
        let audit = AuditEvent(kind: .loginSucceeded, userID: userID, username: username, chainID: chainID, context: context)
        var data = commonData(of: audit, at: now)
        data["device_class"] = .string(deviceClass.rawValue)
        data["device_name"] = .optional(deviceName)
        return OutboxEvent(type: .newDeviceLogin, at: now, data: data)
    }

    /// Who ended a chain, for `chain.revoked`: `user` (logout, own password change), `operator`
    /// (the admin CLI), or `baton` (a rule: reuse, fork, eviction, step-up lockout).
    static func actor(ofRevocation reason: RevocationReason?, isBulk: Bool) -> String {
        if isBulk { return "operator" }
        switch reason {
        case .logout, .loggedInElsewhere, .signedOut: return "user"
        case .admin, .userDisabled, .keyRetired: return "operator"
        case .passwordChanged: return "user_or_operator"
        case .reuseDetected, .forkDetected, .evicted, .confirmFailed, nil: return "baton"
        }
    }

    /// The fields every event carries: user, chain, device, client address, User-Agent, time.
    private static func commonData(of event: AuditEvent, at now: Instant) -> [String: JSONValue] {
        [
            "user_id": event.userID.map { .int($0) } ?? .null,
            "username": .optional(event.username),
            "chain_id": event.chainID.map { .string($0.description) } ?? .null,
            "device_id": .optional(event.context.deviceID),
            "client_address": .optional(event.context.ip),
            "user_agent": .optional(event.context.userAgent),
            "occurred_at": .string(now.rfc3339Milliseconds),
        ]
    }
}
