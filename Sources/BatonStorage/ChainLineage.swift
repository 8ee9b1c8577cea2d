import BatonCore

/// One chain's whole history for `baton admin chain show`: every token it issued, generation
/// by generation, and the incidents (reuse, fork) with both sides. Plain values: renderers are
/// pure functions of it.
package struct ChainLineage: Sendable, Equatable {
    /// A request as the audit trail and the lineage table recorded it.
    package struct Request: Sendable, Equatable {
        package var at: Instant
        package var ip: String?
        package var userAgent: String?
        package var deviceID: String?

        package init(at: Instant, ip: String? = nil, userAgent: String? = nil, deviceID: String? = nil) {
            self.at = at
            self.ip = ip
            self.userAgent = userAgent
            self.deviceID = deviceID
        }
    }

    /// How a token stopped being the head.
    package enum End: String, Sendable, Equatable {
        /// R2: consumed by an exchange.
        case exchanged
        /// R3a: an unused head replaced by a lost-response retry.
        case replaced
    }

    /// One token of the chain.
    package struct Token: Sendable, Equatable {
        package var generation: Int
        package var issuedAt: Instant
        /// The login or exchange that received this token, when the trail still has it.
        package var issuedTo: Request?
        /// nil for the head.
        package var endedAt: Instant?
        package var end: End?
        /// The request that ended it (the exchange caller).
        package var endedBy: Request?

        package init(generation: Int, issuedAt: Instant, issuedTo: Request? = nil, endedAt: Instant? = nil, end: End? = nil, endedBy: Request? = nil) {
            self.generation = generation
            self.issuedAt = issuedAt
            self.issuedTo = issuedTo
            self.endedAt = endedAt
            self.end = end
            self.endedBy = endedBy
        }
    }

    /// A reuse (R3) or fork (R4): the token presented, and both sides.
    package struct Incident: Sendable, Equatable {
        package var kind: AuditKind
        package var generation: Int
        /// Reuse: the exchange that first consumed the token. Fork: the request that received
        /// the replaced sibling. nil when pruned.
        package var original: Request?
        /// Reuse only, as in the `reuse_detected` detail: where `original.deviceID` comes from,
        /// `x-device-id` (the exchange sent it) or `chain` (it did not: the chain's own device).
        package var deviceIDFrom: String?
        /// The request that presented it again.
        package var attempt: Request

        package init(kind: AuditKind, generation: Int, original: Request?, deviceIDFrom: String? = nil, attempt: Request) {
            self.kind = kind
            self.generation = generation
            self.original = original
            self.deviceIDFrom = deviceIDFrom
            self.attempt = attempt
        }
    }

    /// A request refused for its DPoP proof (audit `proof_failed`): someone presented the
    /// chain's token without the chain's key. Nothing changed in the chain.
    package struct ProofFailure: Sendable, Equatable {
        /// The generation of the token presented.
        package var generation: Int?
        /// What failed (`bearer_for_bound_chain`, `key_mismatch`, a `ProofError.failure`).
        package var failure: String
        /// The request shown (the last of a coalesced event's refusals).
        package var request: Request
        /// The refusals this event stands for: a chain's refusals within one window are one
        /// event (docs/dpop.md, "Audit and webhook").
        package var count: Int

        package init(generation: Int?, failure: String, request: Request, count: Int = 1) {
            self.generation = generation
            self.failure = failure
            self.request = request
            self.count = count
        }
    }

    package var id: ChainID
    package var username: String
    package var deviceID: String
    package var deviceClass: DeviceClass
    /// The name the login gave its device (`device_name`), if any.
    package var deviceName: String?
    package var createdAt: Instant
    package var revokedAt: Instant?
    package var revocation: RevocationReason?
    /// Oldest first; the head is last.
    package var tokens: [Token]
    package var incidents: [Incident]
    /// The RFC 7638 thumbprint of the key the chain is bound to (DPoP), or nil for a bearer chain.
    package var jkt: String?
    /// Requests refused for their proof, oldest first.
    package var proofFailures: [ProofFailure]

    package init(
        id: ChainID, username: String, deviceID: String, deviceClass: DeviceClass, deviceName: String? = nil, createdAt: Instant,
        revokedAt: Instant? = nil, revocation: RevocationReason? = nil, tokens: [Token], incidents: [Incident] = [],
        jkt: String? = nil, proofFailures: [ProofFailure] = []
    ) {
        self.jkt = jkt
        self.proofFailures = proofFailures
        self.id = id
        self.username = username
        self.deviceID = deviceID
        self.deviceClass = deviceClass
        self.deviceName = deviceName
        self.createdAt = createdAt
        self.revokedAt = revokedAt
        self.revocation = revocation
        self.tokens = tokens
        self.incidents = incidents
    }
}
