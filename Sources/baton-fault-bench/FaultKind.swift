/// The faults the benchmark injects, one kind per simulated device, each at a stated rate.
///
/// Network faults hit `POST /v1/exchange` (the only request whose loss can cost a session);
/// the app's own requests pass. `byDesign` marks the faults where an exchange reached the
/// server and its answer was lost while the device stayed away longer than the retry grace:
/// with unbound chains the server cannot tell the device's late retry from a thief's, so the
/// chain ends by design (device-bound chains bring them to 0: the retry is proved by the key).
enum FaultKind: String, CaseIterable, Sendable {
    case none = "none"
    case dropRequest = "drop-request"
    case dropAnswer = "drop-answer"
    case stallAnswer = "stall-answer"
    case resetMidAnswer = "reset-mid-answer"
    case duplicateRequest = "duplicate-request"
    case duplicateLate = "duplicate-late"
    case killBeforePersist = "kill-before-persist"
    case suspendKept = "suspend-answer-kept"
    case sharedStore = "shared-store"
    case clockOff = "clock-off-2h"
    case offline = "offline"
    case theft = "theft"
    /// Every exchange answer 0.6-2.5 s late (past the 2-s attempt timeout at times: the last
    /// attempt keeps the full request timeout, issue 29 H2).
    case slowAnswer = "slow-answer"
    /// An exchange schedule fails (the first attempt's answer lost after the server committed,
    /// or the request lost; every retry lost at once), then the app is idle past the retry
    /// grace before it is used again.
    case idleAfterFailure = "idle-after-failure"
    /// Two processes on one store; the device's wall clock jumps by ±2 h as an exchange goes
    /// out (its answer held 0.5-1.2 s), so the other process reads the claim under the moved
    /// clock: the claim's lease must not be fooled (it runs on the boot clock, issue 29 M5).
    case clockJump = "clock-jump"
    /// A thief that copied the device key file with the bundle: its proofs are good, so only
    /// reuse detection can stop it.
    case keyTheft = "theft-with-key"
    case suspendLost = "suspend-answer-lost"
    case offlineAfterCommit = "offline-after-commit"

    /// The chance that one occasion (an exchange request, an app request, a persisted
    /// exchange, a token lifetime) gets the fault, before `--fault-scale`.
    var baseRate: Double {
        switch self {
        case .none, .sharedStore, .clockOff, .slowAnswer: 1
        case .dropRequest, .dropAnswer, .resetMidAnswer, .duplicateRequest, .duplicateLate, .killBeforePersist, .stallAnswer: 0.05
        case .suspendKept, .suspendLost, .offlineAfterCommit: 0.02
        case .offline: 0.01
        case .theft, .keyTheft: 0.05
        case .idleAfterFailure: 0.02
        case .clockJump: 0.1
        }
    }

    /// The chance with the rates scaled by `scale` (at most 1).
    func rate(scaledBy scale: Double) -> Double { baseRate >= 1 ? 1 : min(1, baseRate * scale) }

    /// The rate in words, for the table.
    func rateText(scaledBy scale: Double) -> String {
        let rate = rate(scaledBy: scale)
        // Hundredths of a percent at most (5% × 6 is 30.000000000000004% in binary floating point).
        let hundredths = Int((rate * 10_000).rounded())
        let percent = hundredths % 100 == 0 ? "\(hundredths / 100)%" : "\(Double(hundredths) / 100)%"
        switch self {
        case .none: return "no fault"
        case .sharedStore: return "every device: 2 processes"
        case .clockOff: return "every device: ±2 h, half jump"
        case .offline: return "\(percent) of app requests"
        case .theft, .keyTheft: return "\(percent) of lifetimes"
        case .slowAnswer: return "every exchange: 0.6-2.5 s late"
        case .clockJump: return "\(percent) of exchanges: ±2 h, 2 processes"
        case .idleAfterFailure: return "\(percent) of exchanges: idle 12 s"
        case .killBeforePersist: return "\(percent) of exchange saves"
        default: return "\(percent) of exchanges"
        }
    }

    /// Whether a logout from this fault is the unbound chain's design (see the type's comment).
    /// idle-after-failure is one when the failed schedule's first attempt reached the server.
    var byDesign: Bool { self == .suspendLost || self == .offlineAfterCommit || self == .idleAfterFailure }

    /// Whether a thief strikes on this kind's devices.
    var isTheft: Bool { self == .theft || self == .keyTheft }

    /// Whether the fault is a replay: a copy of an exchange the server already answered to the
    /// device, sent again (same token, same device id) while the successor is still unused. To
    /// the server that is the theft it exists to catch (R3a hands the copy a replacement and
    /// revokes the device's successor, whose next use is a fork): no client can prevent it.
    var isReplay: Bool { self == .duplicateLate }

    /// How many processes share the device's store.
    var processCount: Int { self == .sharedStore || self == .clockJump ? 2 : 1 }

    /// Whether any logout of this fault misses the target (neither by design nor a replay).
    /// With bound chains nothing is by design: the server takes the device's late retry, proved
    /// by its key, for as long as the successor was never presented.
    func mustBeZero(bound: Bool) -> Bool { !isReplay && (bound || !byDesign) }

    /// Whether a logout of this fault is by design in a run with or without binding.
    func isByDesign(bound: Bool) -> Bool { byDesign && !bound }

    /// Whether the fault hits exchange requests in the relay.
    var hitsExchanges: Bool {
        switch self {
        case .dropRequest, .dropAnswer, .stallAnswer, .resetMidAnswer, .duplicateRequest, .duplicateLate,
             .suspendKept, .suspendLost, .offlineAfterCommit, .slowAnswer, .idleAfterFailure, .clockJump: true
        case .none, .killBeforePersist, .sharedStore, .clockOff, .offline, .theft, .keyTheft: false
        }
    }
}
