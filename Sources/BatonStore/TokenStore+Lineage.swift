import BatonCore

extension TokenStore {
    /// The request that received `tokens[index]` (generation 1 and later): an exchange ends the token before and issues
    /// this one in the same transaction, at the same instant. R3a: a retry ends the unused head
    /// of the same generation (`replaced`) and issues its replacement; R2: an exchange ends
    /// the previous generation (`exchanged`).
    static func issuer(of index: Int, in tokens: [ChainLineage.Token]) -> ChainLineage.Request? {
        let token = tokens[index]
        let candidates = tokens.indices.filter { $0 != index && tokens[$0].endedAt == token.issuedAt }
        // Tokens are ordered by generation, then issue time: a retry's replaced sibling comes first.
        let retry = candidates.first { $0 < index && tokens[$0].generation == token.generation && tokens[$0].end == .replaced }
        let exchange = candidates.first { tokens[$0].generation == token.generation - 1 && tokens[$0].end == .exchanged }
        return (retry ?? exchange).flatMap { tokens[$0].endedBy }
    }

    /// The whole lineage of chain `id`: its tokens from the lineage table and the head, who
    /// received and who ended each (matched by instant: an exchange ends one token and issues
    /// the next at the same millisecond), and its reuse and fork incidents from the audit trail.
    /// - Throws: `.chainNotFound` (never existed, or pruned).
    package func lineage(of id: ChainID) throws(BatonError) -> ChainLineage {
        let result = try read { connection throws(SQLiteError) -> Result<ChainLineage, BatonError> in
            guard let chain = try connection.statement("""
                SELECT c.device_id, c.device_class, c.created_at, c.head_generation, c.head_issued_at, c.revoked_at,
                       c.revoked_reason, u.username
                FROM chains c JOIN users u ON u.id = c.user_id WHERE c.id = ?
                """).first([.int(id.rawValue)], { row in
                    (device: row.text(0), deviceClass: DeviceClass(rawValue: row.text(1)) ?? .other, created: Instant(milliseconds: row.int(2)),
                     headGeneration: Int(row.int(3)), headIssued: Instant(milliseconds: row.int(4)),
                     revokedAt: row.optionalInt(5).map(Instant.init(milliseconds:)),
                     reason: row.optionalText(6).flatMap(RevocationReason.init(rawValue:)), username: row.text(7))
                })
            else { return .failure(.chainNotFound(id)) }
            var tokens = try connection.statement("""
                SELECT generation, issued_at, ended_at, ended_by, ip, user_agent, device_id FROM tokens
                WHERE chain_id = ? ORDER BY generation, issued_at
                """).all([.int(id.rawValue)]) { row in
                    ChainLineage.Token(
                        generation: Int(row.int(0)), issuedAt: Instant(milliseconds: row.int(1)),
                        endedAt: Instant(milliseconds: row.int(2)), end: ChainLineage.End(rawValue: row.text(3)),
                        endedBy: ChainLineage.Request(at: Instant(milliseconds: row.int(2)), ip: row.optionalText(4),
                                                      userAgent: row.optionalText(5), deviceID: row.optionalText(6)))
                }
            tokens.append(ChainLineage.Token(generation: chain.headGeneration, issuedAt: chain.headIssued))
            let events = try connection.statement("""
                SELECT kind, at, generation, ip, user_agent, device_id FROM audit
                WHERE chain_id = ? AND kind IN ('login_succeeded', 'reuse_detected', 'fork_detected') ORDER BY id
                """).all([.int(id.rawValue)]) { row in
                    (kind: AuditKind(rawValue: row.text(0)), generation: row.optionalInt(2).map { Int($0) },
                     request: ChainLineage.Request(at: Instant(milliseconds: row.int(1)), ip: row.optionalText(3),
                                                   userAgent: row.optionalText(4), deviceID: row.optionalText(5)))
                }
            let login = events.first { $0.kind == .loginSucceeded }?.request
            for index in tokens.indices {
                tokens[index].issuedTo = tokens[index].generation == 0 ? login : Self.issuer(of: index, in: tokens)
            }
            let incidents = events.compactMap { event -> ChainLineage.Incident? in
                guard let generation = event.generation else { return nil }
                switch event.kind {
                case .reuseDetected?:
                    var original = tokens.first { $0.generation == generation && $0.end == .exchanged }?.endedBy
                    // As in the reuse_detected detail: without X-Device-Id, the chain's own device.
                    let deviceIDFrom = original.map { $0.deviceID == nil ? "chain" : "x-device-id" }
                    if original?.deviceID == nil { original?.deviceID = chain.device }
                    return ChainLineage.Incident(kind: .reuseDetected, generation: generation, original: original,
                                                 deviceIDFrom: deviceIDFrom, attempt: event.request)
                case .forkDetected?:
                    let original = tokens.first { $0.generation == generation && $0.end == .replaced }?.issuedTo
                    return ChainLineage.Incident(kind: .forkDetected, generation: generation, original: original, attempt: event.request)
                default:
                    return nil
                }
            }
            return .success(ChainLineage(
                id: id, username: chain.username, deviceID: chain.device, deviceClass: chain.deviceClass, createdAt: chain.created,
                revokedAt: chain.revokedAt, revocation: chain.reason, tokens: tokens, incidents: incidents))
        }
        return try result.get()
    }
}
