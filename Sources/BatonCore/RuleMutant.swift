/// Known server defects, re-introduced on purpose for the deterministic simulation
/// (`baton-sim --mutant NAME`, docs/reliability.md), one switch each. Off unless `baton-sim`
/// turns one on.
package enum RuleMutant: String, CaseIterable, Sendable {
    /// Issue 41 before R3b: attempt numbers are ignored, so an abandoned attempt that arrives
    /// after its retry replaces the successor the client holds (R3a).
    case abandonedAttemptReplacesHead = "abandoned-attempt-replaces-head"

    /// The mutants switched on now (none, outside `baton-sim`).
    nonisolated(unsafe) package static var active: Set<RuleMutant> = []

    /// Whether this mutant is on.
    var isActive: Bool { !Self.active.isEmpty && Self.active.contains(self) }
}
