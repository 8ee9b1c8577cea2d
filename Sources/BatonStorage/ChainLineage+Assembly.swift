import BatonCore

/// How both stores build a `ChainLineage` from what they read: the chain row, its lineage rows,
/// and its login, reuse and fork events. Pure: no SQL here, each store reads its own way.
extension ChainLineage {
    /// The chain row's columns the lineage shows.
    package struct ChainRow: Sendable, Equatable {
        package var username: String
        package var deviceID: String
        package var deviceClass: DeviceClass
        package var deviceName: String?
        package var createdAt: Instant
        package var headGeneration: Int
        package var headIssuedAt: Instant
        package var revokedAt: Instant?
        package var revocation: RevocationReason?
        /// The key the chain is bound to (DPoP), or nil.
        package var jkt: String?

        package init(username: String, deviceID: String, deviceClass: DeviceClass, deviceName: String? = nil, createdAt: Instant, headGeneration: Int,
                     headIssuedAt: Instant, revokedAt: Instant?, revocation: RevocationReason?, jkt: String? = nil) {
            self.jkt = jkt
            self.username = username
            self.deviceID = deviceID
            self.deviceClass = deviceClass
            self.deviceName = deviceName
            self.createdAt = createdAt
            self.headGeneration = headGeneration
            self.headIssuedAt = headIssuedAt
            self.revokedAt = revokedAt
            self.revocation = revocation
        }
    }

    /// One audit event of the chain, of a kind in `trailKinds`.
    package struct TrailEvent: Sendable, Equatable {
        /// nil for a kind this build does not know.
        package var kind: AuditKind?
        package var generation: Int?
        package var request: Request
        /// `proof_failed`'s `detail.failure`; nil for other kinds.
        package var failure: String?
        /// `proof_failed`'s `detail.count`: the refusals the event stands for (coalesced per
        /// chain and window); 1 without one.
        package var count: Int

        package init(kind: AuditKind?, generation: Int?, request: Request, failure: String? = nil, count: Int = 1) {
            self.failure = failure
            self.count = count
            self.kind = kind
            self.generation = generation
            self.request = request
        }
    }

    /// The audit kinds a lineage reads, in the order written (by event id).
    package static let trailKinds: [AuditKind] = [.loginSucceeded, .reuseDetected, .forkDetected, .proofFailed]

    /// `trailKinds` as an SQL list of string literals.
    package static var trailKindsSQL: String { sqlStringLiterals(trailKinds.map(\.rawValue)) }

    /// A token from its lineage row (`tokens`): it ended at `endedAt`, by the request recorded there.
    package static func endedToken(
        generation: Int, issuedAt: Instant, endedAt: Instant, endedBy: String, ip: String?, userAgent: String?, deviceID: String?
    ) -> Token {
        Token(generation: generation, issuedAt: issuedAt, endedAt: endedAt, end: End(rawValue: endedBy),
              endedBy: Request(at: endedAt, ip: ip, userAgent: userAgent, deviceID: deviceID))
    }

    /// The whole lineage of chain `id`: its ended tokens (ordered by generation, then issue
    /// time) and the head, who received and who ended each (matched by instant: an exchange
    /// ends one token and issues the next at the same millisecond), and its reuse and fork
    /// incidents from the trail.
    package init(id: ChainID, chain: ChainRow, endedTokens: [Token], trail: [TrailEvent]) {
        var tokens = endedTokens + [Token(generation: chain.headGeneration, issuedAt: chain.headIssuedAt)]
        let login = trail.first { $0.kind == .loginSucceeded }?.request
        for index in tokens.indices {
            tokens[index].issuedTo = tokens[index].generation == 0 ? login : Self.issuer(of: index, in: tokens)
        }
        let incidents = trail.compactMap { event -> Incident? in
            guard let generation = event.generation else { return nil }
            switch event.kind {
            case .reuseDetected?:
                var original = tokens.first { $0.generation == generation && $0.end == .exchanged }?.endedBy
                // As in the reuse_detected detail: without X-Device-Id, the chain's own device.
                let deviceIDFrom = original.map { $0.deviceID == nil ? "chain" : "x-device-id" }
                if original?.deviceID == nil { original?.deviceID = chain.deviceID }
                return Incident(kind: .reuseDetected, generation: generation, original: original, deviceIDFrom: deviceIDFrom, attempt: event.request)
            case .forkDetected?:
                let original = tokens.first { $0.generation == generation && $0.end == .replaced }?.issuedTo
                return Incident(kind: .forkDetected, generation: generation, original: original, attempt: event.request)
            default:
                return nil
            }
        }
        let proofFailures = trail.compactMap { event -> ProofFailure? in
            guard event.kind == .proofFailed else { return nil }
            return ProofFailure(generation: event.generation, failure: event.failure ?? "unknown", request: event.request, count: event.count)
        }
        self.init(id: id, username: chain.username, deviceID: chain.deviceID, deviceClass: chain.deviceClass, deviceName: chain.deviceName, createdAt: chain.createdAt,
                  revokedAt: chain.revokedAt, revocation: chain.revocation, tokens: tokens, incidents: incidents,
                  jkt: chain.jkt, proofFailures: proofFailures)
    }

    /// The request that received `tokens[index]` (generation 1 and later): an exchange ends the
    /// token before and issues this one in the same transaction, at the same instant. R3a: a
    /// retry ends the unused head of the same generation (`replaced`) and issues its
    /// replacement; R2: an exchange ends the previous generation (`exchanged`).
    package static func issuer(of index: Int, in tokens: [Token]) -> Request? {
        let token = tokens[index]
        let candidates = tokens.indices.filter { $0 != index && tokens[$0].endedAt == token.issuedAt }
        // Tokens are ordered by generation, then issue time: a retry's replaced sibling comes first.
        let retry = candidates.first { $0 < index && tokens[$0].generation == token.generation && tokens[$0].end == .replaced }
        let exchange = candidates.first { tokens[$0].generation == token.generation - 1 && tokens[$0].end == .exchanged }
        return (retry ?? exchange).flatMap { tokens[$0].endedBy }
    }
}
