import BatonCore
import BatonStorage

/// `baton admin chain show` as text and JSON: pure functions of a `ChainLineage`.
enum LineageText {
    /// A header (with the device's name when the login gave one), one row per token (who received it, when it ended and how), then each
    /// incident with its original and attempt side by side.
    static func table(_ lineage: ChainLineage) -> String {
        let name = lineage.deviceName.map { " '\(TerminalText.escape($0))'" } ?? ""
        var lines = ["Chain \(lineage.id) of '\(TerminalText.escape(lineage.username))', device \(TerminalText.escape(lineage.deviceID))\(name) (\(lineage.deviceClass.rawValue))"]
        var state = "Created \(lineage.createdAt.rfc3339Milliseconds)"
        if let at = lineage.revokedAt, let reason = lineage.revocation { state += "; revoked \(at.rfc3339Milliseconds) (\(reason.rawValue))" }
        // A bound chain says so on the same line (a bearer chain's text is as before).
        if let jkt = lineage.jkt { state += "; bound to key \(TerminalText.escape(jkt)) (DPoP)" }
        lines.append(state)
        lines.append("")
        let rows = lineage.tokens.map { token in
            [String(token.generation), token.issuedAt.rfc3339Milliseconds, token.endedAt?.rfc3339Milliseconds ?? "-", how(token, in: lineage)]
                + requestCells(token.issuedTo)
        }
        lines.append(BatonCLI.table(["GEN", "ISSUED", "ENDED", "HOW", "ISSUED TO IP", "USER AGENT", "DEVICE"], rows))
        for incident in lineage.incidents {
            lines.append("")
            lines.append("\(incident.kind == .reuseDetected ? "REUSE" : "FORK") of generation \(incident.generation):")
            let sides = [["original", incident.original?.at.rfc3339Milliseconds ?? "-"] + requestCells(incident.original),
                         ["attempt", incident.attempt.at.rfc3339Milliseconds] + requestCells(incident.attempt)]
            lines += BatonCLI.table(["SIDE", "AT", "IP", "USER AGENT", "DEVICE"], sides).split(separator: "\n").map { "  " + $0 }
        }
        if !lineage.proofFailures.isEmpty {
            // The token without the key: refused, nothing changed (docs/dpop.md).
            let count = lineage.proofFailures.reduce(0) { $0 + $1.count }
            lines.append("")
            lines.append("PROOF FAILED \(count) \(count == 1 ? "time" : "times") (the token presented without the chain's key; refused, nothing changed):")
            let rows = lineage.proofFailures.map { failure in
                [failure.request.at.rfc3339Milliseconds, failure.generation.map(String.init) ?? "-", Self.failureText(failure)] + requestCells(failure.request)
            }
            lines += BatonCLI.table(["AT", "GEN", "FAILURE", "IP", "USER AGENT", "DEVICE"], rows).split(separator: "\n").map { "  " + $0 }
        }
        return lines.joined(separator: "\n")
    }

    /// A refused proof's failure, with the number of refusals when its event stands for several
    /// (coalesced per chain and window: the request shown is the last of them).
    static func failureText(_ failure: ChainLineage.ProofFailure) -> String {
        failure.count == 1 ? failure.failure : "\(failure.failure), \(failure.count) times"
    }

    /// How a token ended, with the incident that concerned it: `exchanged`, `replaced`,
    /// `head`, `head (revoked)`, and `, REUSED` / `, FORKED` when presented again.
    static func how(_ token: ChainLineage.Token, in lineage: ChainLineage) -> String {
        var text = token.end?.rawValue ?? (lineage.revocation == nil ? "head" : "head (revoked)")
        let expected: ChainLineage.End? = token.end == .replaced ? .replaced : .exchanged
        for incident in lineage.incidents where incident.generation == token.generation && token.end == expected {
            text += incident.kind == .reuseDetected ? ", REUSED" : ", FORKED"
        }
        return text
    }

    private static func requestCells(_ request: ChainLineage.Request?) -> [String] {
        [request?.ip ?? "-", request?.userAgent ?? "-", request?.deviceID ?? "-"]
    }

    /// One JSON object: the chain, `tokens` oldest first, `incidents` with both sides.
    static func json(_ lineage: ChainLineage) -> String {
        func request(_ request: ChainLineage.Request?, deviceIDFrom: String? = nil) -> JSONValue {
            guard let request else { return .null }
            var members: [String: JSONValue] = ["at": .string(request.at.rfc3339Milliseconds), "ip": .optional(request.ip),
                                                "user_agent": .optional(request.userAgent), "device_id": .optional(request.deviceID)]
            if let deviceIDFrom { members["device_id_from"] = .string(deviceIDFrom) }
            return .object(members)
        }
        return JSONValue.object([
            "chain_id": .string(lineage.id.description), "username": .string(lineage.username),
            "device_id": .string(lineage.deviceID), "device_class": .string(lineage.deviceClass.rawValue),
            "device_name": .optional(lineage.deviceName),
            "created_at": .string(lineage.createdAt.rfc3339Milliseconds),
            "revoked_at": .optional(lineage.revokedAt?.rfc3339Milliseconds), "revoked_reason": .optional(lineage.revocation?.rawValue),
            "bound": .bool(lineage.jkt != nil), "jkt": .optional(lineage.jkt),
            "proof_failures": .array(lineage.proofFailures.map { failure in
                .object(["failure": .string(failure.failure), "generation": failure.generation.map { .int(Int64($0)) } ?? .null,
                         "request": request(failure.request), "count": .int(Int64(failure.count))])
            }),
            "tokens": .array(lineage.tokens.map { token in
                .object(["generation": .int(Int64(token.generation)), "issued_at": .string(token.issuedAt.rfc3339Milliseconds),
                         "issued_to": request(token.issuedTo), "ended_at": .optional(token.endedAt?.rfc3339Milliseconds),
                         "ended_by": .optional(token.end?.rawValue), "ended_by_request": request(token.endedBy)])
            }),
            "incidents": .array(lineage.incidents.map { incident in
                .object(["kind": .string(incident.kind.rawValue), "generation": .int(Int64(incident.generation)),
                         "original": request(incident.original, deviceIDFrom: incident.deviceIDFrom), "attempt": request(incident.attempt)])
            }),
        ]).text
    }
}
