/// Known client defects, re-introduced on purpose, one switch each, so that the deterministic
/// simulation (`baton-sim --mutant NAME`, docs/reliability.md) can show it finds each of them:
/// a simulator that finds nothing has not been shown to look. Off unless `baton-sim` turns one
/// on; apps never do (it is `@_spi(Simulation)`: an app that imports BatonClient plainly does not see it).
@_spi(Simulation) public enum SimulationMutant: String, CaseIterable, Sendable {
    /// H1: a session whose claim was taken over presents its own successor anyway (the
    /// takeover's retry may have replaced it: a fork).
    case takeoverAdoptsReplacedSuccessor = "takeover-adopts-replaced-successor"
    /// H2: the last exchange attempt is cut at the short attempt timeout too (2 s), so a slow
    /// network's answer is never read and the retry comes too late.
    case lastAttemptCut = "last-attempt-cut"
    /// H5: after one failed read of the store, the older stored token is adopted over the
    /// session's newer one.
    case adoptOlderTokenAfterFailedRead = "adopt-older-token-after-failed-read"
    /// Issue 41: a successor the store refused is presented unsaved.
    case presentUnsavedSuccessor = "present-unsaved-successor"
    /// Every attempt is sent when its claim could not be renewed in the store (the lock or the
    /// write failed), numbered from the session's own count, not just one numbered above the
    /// stored number: a takeover meanwhile numbers below the second, and that late attempt
    /// replaces the takeover's successor (baton-sim seed 2165139018237).
    case attemptWithoutRenewedClaim = "attempt-without-renewed-claim"
    /// An attempt's deadline ends its request, so the late answer to the last attempt sent is
    /// thrown away even when no further attempt may go out (the store refused its number): the
    /// next exchange comes after the head was made, past a Bearer chain's grace (baton-sim seed
    /// 215745220614506).
    case lateAnswerDiscarded = "late-answer-discarded"

    /// The mutants switched on now (none, outside `baton-sim`).
    @_spi(Simulation) nonisolated(unsafe) public static var active: Set<SimulationMutant> = []

    /// Whether this mutant is on.
    var isActive: Bool { !Self.active.isEmpty && Self.active.contains(self) }
}
