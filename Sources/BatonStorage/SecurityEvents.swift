import BatonCore

/// The audit events that are evidence of an incident. Pruning keeps a chain that has one
/// (with its lineage and whole trail) past the retention unless asked explicitly, so
/// `baton admin chain show` still works when the incident is investigated months later.
package enum SecurityEvents {
    /// Kinds that are always evidence. A new security kind is one line here.
    /// Not `proof_failed`: a refused proof changed nothing, and anyone holding any token of a
    /// bound chain (a revoked one included) can write one, so it made any chain unprunable
    /// (issue 28, finding 2d). A chain with refused proofs is pruned with its trail like any
    /// other once it has ended; a reuse or a revocation it led to is still evidence.
    package static let kinds: [AuditKind] = [
        .reuseDetected,
        .forkDetected,
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
