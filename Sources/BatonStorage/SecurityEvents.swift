import BatonCore

/// The audit events that are evidence of an incident. Pruning keeps a chain that has one
/// (with its lineage and whole trail) past the retention unless asked explicitly, so
/// `baton admin chain show` still works when the incident is investigated months later.
package enum SecurityEvents {
    /// Kinds that are always evidence. A new security kind is one line here.
    package static let kinds: [AuditKind] = [
        .reuseDetected,
        .forkDetected,
        // Someone presented the chain's token without its key: a stolen token, refused.
        .proofFailed,
    ]

    /// `chain_revoked` events that are evidence, by revocation reason: an operator's
    /// revocation, the revocations that follow a reuse or fork, and the one that follows
    /// five wrong passwords at step-up (a token thief guessing through /v1/confirm).
    /// Not `revoke --all` (detail `scope: all`): it says nothing about any one chain, and
    /// after a restore it would keep every chain forever.
    package static let revocationReasons: [RevocationReason] = [
        .admin,
        .reuseDetected,
        .forkDetected,
        .confirmFailed,
    ]

    /// `kinds` as an SQL list of string literals, for a store's own evidence condition. The
    /// values are our own enum raw values (snake_case ASCII), never user input.
    package static var kindsSQL: String { sqlStringLiterals(kinds.map(\.rawValue)) }

    /// `revocationReasons` as an SQL list of string literals.
    package static var revocationReasonsSQL: String { sqlStringLiterals(revocationReasons.map(\.rawValue)) }
}

/// `'a', 'b'`: our own enum raw values as an SQL list (never user input: no quoting needed).
func sqlStringLiterals(_ values: [String]) -> String { values.map { "'\($0)'" }.joined(separator: ", ") }
