import BatonCore
import BatonStorage
import BatonSync
import Dispatch

/// The `proof_failed` audit of refused DPoP proofs, coalesced per chain and window, to be
/// written off the request path (issue 28, findings 2b and 3).
///
/// Anyone holding any token of a bound chain (a revoked one included) can have proofs
/// refused as fast as they can send them. Each refusal used to be one durable audit write,
/// on the event loop for verify, and one `device.proof_rejected` webhook: 2,000 of them in
/// 0.8 s delayed a real reuse alert by 45 s, and 32 connections of refused verifies took
/// everyone's verify from 0.13 to 12 ms. Now:
/// * the first refusal of a chain opens a window (`window`, 10 s by default) and is written as
///   it is, with `count` 1, at the next flush (at once, off the loop);
/// * the others within the window are counted, and written as one event when the window
///   ends: the last one's address, User-Agent and failure, and `count` the refusals it
///   stands for. A flood that goes on is one event per chain per window; the counts add up
///   to the refusals.
///
/// Memory is bounded: at most `capacity` chains have a window open; a refusal beyond that is
/// counted in `dropped` only. Thread-safe; every call is a hash lookup and an append.
package final class ProofFailureLog: Sendable {
    /// The writers' queue (serial: one batch at a time, whichever store it is for).
    static let queue = DispatchQueue(label: "baton.proof-failures")
    /// Chains with a window open, at most.
    package let capacity: Int
    private let state: Locked<State>

    package init(window: Duration = .seconds(10), capacity: Int = 100_000) {
        precondition(window >= .zero && capacity > 0)
        self.capacity = capacity
        state = Locked(State(window: window))
    }

    /// How long a chain's refusals are counted into one event (`--dpop-audit-window`); zero:
    /// each refusal is its own event (still written off the request path).
    package var window: Duration {
        get { state.withLock { $0.window } }
        set { precondition(newValue >= .zero); state.withLock { $0.window = newValue } }
    }

    /// How often the writer wakes while a window is open.
    package var tick: Duration { min(window, .milliseconds(100)) }

    /// Notes the refusal `event` (a `proof_failed`) at `now`.
    /// - Returns: whether the caller must start the writer (it was idle).
    package func note(_ event: AuditEvent, at now: Instant) -> Bool {
        state.withLock { state in
            guard let chain = event.chainID else {
                state.ready.append((Self.counted(event, 1), now))
                return state.arm()
            }
            if var open = state.windows[chain], now < open.opened + state.window {
                open.count += 1
                open.latest = event
                open.latestAt = now
                state.windows[chain] = open
            } else {
                if let open = state.windows[chain] { state.close(chain, open, at: now) }
                guard state.windows.count < capacity else {
                    state.dropped += 1
                    return state.arm()
                }
                state.open(chain, at: now)
                state.ready.append((Self.counted(event, 1), now))
            }
            return state.arm()
        }
    }

    /// What is due at `now`: each new window's first event, and one event for each window that
    /// ended with refusals counted; and whether the writer must wake again (a window is open).
    package func due(at now: Instant) -> (events: [(AuditEvent, Instant)], again: Bool) {
        state.withLock { state in
            while state.head < state.order.count, state.order[state.head].opened + state.window <= now {
                let (chain, opened) = state.order[state.head]
                state.head += 1
                // A window closed early (a refusal after its end reopened it) left a stale entry.
                guard let open = state.windows[chain], open.opened == opened else { continue }
                state.windows[chain] = nil
                if open.count > 0 {
                    state.close(chain, open, at: now)
                    state.open(chain, at: now)  // a flood that goes on: one event per window
                }
            }
            if state.head > 1024, state.head * 2 > state.order.count {
                state.order.removeFirst(state.head)
                state.head = 0
            }
            let events = state.ready
            state.ready = []
            if state.windows.isEmpty { state.isArmed = false }
            return (events, state.isArmed)
        }
    }

    /// Every window closed now, whatever its age (at shutdown).
    package func drain(at now: Instant) -> [(AuditEvent, Instant)] {
        state.withLock { state in
            for (chain, open) in state.windows where open.count > 0 { state.close(chain, open, at: now) }
            state.windows = [:]
            state.order = []
            state.head = 0
            state.isArmed = false
            let events = state.ready
            state.ready = []
            return events
        }
    }

    /// Refusals not recorded: beyond `capacity` open windows, or lost with a failed write.
    package var dropped: Int { state.withLock { $0.dropped } }

    /// Counts `lost` refusals whose events could not be written.
    package func lost(_ events: [(AuditEvent, Instant)]) {
        let refusals = events.reduce(0) { $0 + Self.count(of: $1.0) }
        state.withLock { $0.dropped += refusals }
    }

    /// `event` with `detail.count`.
    static func counted(_ event: AuditEvent, _ count: Int) -> AuditEvent {
        var event = event
        event.detail["count"] = .int(Int64(count))
        return event
    }

    static func count(of event: AuditEvent) -> Int {
        if case .int(let count)? = event.detail["count"] { return Int(count) }
        return 1
    }

    private struct Window {
        var opened: Instant
        var count = 0
        var latest: AuditEvent?
        var latestAt: Instant
    }

    private struct State {
        var window: Duration
        var windows: [ChainID: Window] = [:]
        /// The windows in the order they opened: every window lasts as long, so also the order they end.
        var order: [(chain: ChainID, opened: Instant)] = []
        var head = 0
        var ready: [(AuditEvent, Instant)] = []
        var isArmed = false
        var dropped = 0

        mutating func open(_ chain: ChainID, at now: Instant) {
            windows[chain] = Window(opened: now, latestAt: now)
            order.append((chain, now))
        }

        /// The window's summary, if it counted refusals after its first.
        mutating func close(_ chain: ChainID, _ open: Window, at now: Instant) {
            windows[chain] = nil
            guard open.count > 0, let latest = open.latest else { return }
            ready.append((ProofFailureLog.counted(latest, open.count), open.latestAt))
        }

        /// Whether the writer must be started: true once, until `due` finds nothing open.
        mutating func arm() -> Bool {
            guard !isArmed else { return false }
            isArmed = true
            return true
        }
    }
}
