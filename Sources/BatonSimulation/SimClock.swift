// SimClock.swift — simulated time for `DeterministicExecutor`.
//
// Simulated time starts at zero at the beginning of every
// `DeterministicExecutor.run` and only moves when the executor is idle (no
// job is ready): it then jumps to the earliest pending timer and fires every
// timer due at that instant. Nothing here reads a real clock.

import Synchronization

/// A `Clock` whose time is simulated by `DeterministicExecutor`.
///
/// Inject it wherever code under test would use `ContinuousClock`:
///
/// ```swift
/// let clock: any Clock<Duration> = SimClock()
/// try await clock.sleep(for: .seconds(5))      // simulated: costs no real time
/// try await Task.sleep(for: .seconds(5), clock: SimClock())
/// ```
///
/// `sleep` honours task cancellation: a cancelled sleeper is resumed at once
/// (without waiting for simulated time) by throwing `CancellationError`.
///
/// `SimClock` may only be used inside `DeterministicExecutor.run` (it traps
/// otherwise), because there is nobody else to advance its time.
package struct SimClock: Clock, Sendable {
  /// A point in simulated time: nanoseconds since the current run started.
  package struct Instant: InstantProtocol, Sendable, CustomStringConvertible {
    /// Nanoseconds since the start of the current simulation run.
    package var nanoseconds: Int64

    package init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    package func advanced(by duration: Duration) -> Instant {
      Instant(nanoseconds: nanoseconds &+ duration.simNanoseconds)
    }
    package func duration(to other: Instant) -> Duration {
      .nanoseconds(other.nanoseconds &- nanoseconds)
    }
    package static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
    package var description: String { "t+\(Duration.nanoseconds(nanoseconds))" }
  }

  package init() {}

  /// The current simulated instant.
  package var now: Instant { Instant(nanoseconds: simTimers.now) }
  /// The current simulated instant.
  package static var now: Instant { Instant(nanoseconds: simTimers.now) }
  /// Simulated time has nanosecond resolution.
  package var minimumResolution: Duration { .nanoseconds(1) }

  /// Suspends the current task until simulated time reaches `deadline`.
  ///
  /// * Throws `CancellationError` immediately if the task is already
  ///   cancelled, and promptly (in the same simulated instant) if it is
  ///   cancelled while sleeping.
  /// * A deadline that is not in the future still suspends: the task is
  ///   resumed the next time the executor is idle (timers only fire when no
  ///   job is ready).
  /// * During `DeterministicExecutor`'s teardown phase every sleep cancels
  ///   its own task and throws `CancellationError`, so retry loops end.
  /// * `tolerance` is ignored.
  package func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
    try Task.checkCancellation()
    guard DeterministicExecutor.isRunning else {
      fatalError("SimClock.sleep called outside DeterministicExecutor.run: nothing would ever advance simulated time")
    }
    if simTimers.isTearingDown {
      withUnsafeCurrentTask { $0?.cancel() }
      throw CancellationError()
    }
    let id = simTimers.reserveID()
    defer { simTimers.forgetCancellationMark(id) }
    try await withTaskCancellationHandler {
      try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
        let registered = withUnsafeCurrentTask { task in
          simTimers.addSleeper(id: id, deadline: deadline.nanoseconds, continuation: continuation,
                               task: task.map(TaskRef.init))
        }
        if !registered { continuation.resume(throwing: CancellationError()) }
      }
    } onCancel: {
      simTimers.cancelSleeper(id: id)
    }
  }

  /// Runs `action` on the driving thread, outside any task, when simulated
  /// time reaches `now + delay`. Use it to model a network delivery: the
  /// action typically resumes a continuation.
  @discardableResult
  package static func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> SimTimer {
    schedule(at: now.advanced(by: delay), action)
  }

  /// Runs `action` when simulated time reaches `instant` (see `schedule(after:_:)`).
  @discardableResult
  package static func schedule(at instant: Instant, _ action: @escaping @Sendable () -> Void) -> SimTimer {
    precondition(DeterministicExecutor.isRunning, "SimClock.schedule called outside DeterministicExecutor.run")
    return SimTimer(id: simTimers.add(.action(action), deadline: instant.nanoseconds))
  }
}

/// Handle to a timer created by `SimClock.schedule`.
package struct SimTimer: Sendable, Hashable {
  let id: UInt64
  /// Cancels the timer; returns `false` if it already fired or was cancelled.
  @discardableResult
  package func cancel() -> Bool { simTimers.removePayload(id: id) }
}

extension Duration {
  /// The duration in whole nanoseconds (truncated), saturating at Int64 bounds.
  var simNanoseconds: Int64 {
    let (s, a) = components
    let (ns, o1) = s.multipliedReportingOverflow(by: 1_000_000_000)
    if o1 { return s < 0 ? .min : .max }
    let (r, o2) = ns.addingReportingOverflow(a / 1_000_000_000)
    return o2 ? (s < 0 ? .min : .max) : r
  }
}

/// `UnsafeCurrentTask` captured while a task is suspended in `SimClock.sleep`;
/// used by teardown to really cancel that task. Valid while the sleeper entry
/// exists: a suspended task stays alive until it is resumed.
struct TaskRef: @unchecked Sendable {
  let task: UnsafeCurrentTask
}

// MARK: - Timer queue (internal)

/// The process-wide timer table. Lock-protected: cancellation handlers can in
/// principle run on any thread.
let simTimers = SimTimerQueue()

final class SimTimerQueue: Sendable {
  enum Payload: @unchecked Sendable {
    /// A raw runtime job (the wake-up task of a real `Task.sleep`).
    case job(UnownedJob, isMain: Bool)
    /// A task suspended in `SimClock.sleep`.
    case sleeper(UnsafeContinuation<Void, any Error>, TaskRef?)
    /// A `SimClock.schedule` callback.
    case action(@Sendable () -> Void)
  }

  struct Entry {
    var deadline: Int64
    var id: UInt64  // ids grow monotonically: ties fire in creation order
    @inline(__always) static func < (a: Entry, b: Entry) -> Bool {
      a.deadline != b.deadline ? a.deadline < b.deadline : a.id < b.id
    }
  }

  struct State {
    var now: Int64 = 0
    var nextID: UInt64 = 1
    var heap: [Entry] = []            // binary min-heap, lazily pruned
    var payloads: [UInt64: Payload] = [:]
    var cancelledEarly: Set<UInt64> = []
    var tearingDown = false
    var fired = 0
  }

  let state = Mutex(State())

  var now: Int64 { state.withLock { $0.now } }
  var isTearingDown: Bool { state.withLock { $0.tearingDown } }

  func reserveID() -> UInt64 {
    state.withLock { s in defer { s.nextID += 1 }; return s.nextID }
  }

  /// Adds a timer; returns its id.
  func add(_ payload: Payload, deadline: Int64) -> UInt64 {
    state.withLock { s in
      let id = s.nextID
      s.nextID += 1
      s.payloads[id] = payload
      Self.push(&s.heap, Entry(deadline: max(deadline, s.now), id: id))
      return id
    }
  }

  /// Registers a sleeper unless it was cancelled before getting here.
  func addSleeper(id: UInt64, deadline: Int64, continuation: UnsafeContinuation<Void, any Error>,
                  task: TaskRef?) -> Bool {
    state.withLock { s in
      if s.cancelledEarly.remove(id) != nil { return false }
      s.payloads[id] = .sleeper(continuation, task)
      Self.push(&s.heap, Entry(deadline: max(deadline, s.now), id: id))
      return true
    }
  }

  /// Cancellation handler of `SimClock.sleep`: resumes the sleeper now.
  func cancelSleeper(id: UInt64) {
    let continuation: UnsafeContinuation<Void, any Error>? = state.withLock { s in
      if case .sleeper(let c, _)? = s.payloads[id] {
        s.payloads[id] = nil
        return c
      }
      s.cancelledEarly.insert(id)  // not registered yet (or already fired)
      return nil
    }
    continuation?.resume(throwing: CancellationError())
  }

  func forgetCancellationMark(_ id: UInt64) {
    state.withLock { s in _ = s.cancelledEarly.remove(id) }
  }

  func removePayload(id: UInt64) -> Bool {
    state.withLock { s in s.payloads.removeValue(forKey: id) != nil }
  }

  /// The earliest live deadline, pruning cancelled entries.
  func nextDeadline() -> Int64? {
    state.withLock { s in
      while let top = s.heap.first {
        if s.payloads[top.id] != nil { return top.deadline }
        Self.pop(&s.heap)
      }
      return nil
    }
  }

  var pendingCount: Int { state.withLock { $0.payloads.count } }

  /// Sets `now` to `deadline` and removes every timer due then, in order.
  func takeDue(at deadline: Int64) -> [Payload] {
    state.withLock { s in
      precondition(deadline >= s.now, "simulated time must not go backwards")
      s.now = deadline
      var due: [Payload] = []
      while let top = s.heap.first, top.deadline <= deadline {
        Self.pop(&s.heap)
        if let p = s.payloads.removeValue(forKey: top.id) { due.append(p) }
      }
      s.fired += due.count
      return due
    }
  }

  /// Teardown: the ids and tasks of all current sleepers, in id order
  /// (dictionary order is not deterministic across processes).
  func sleepers() -> [(id: UInt64, task: TaskRef?)] {
    state.withLock { s in
      var out: [(id: UInt64, task: TaskRef?)] = []
      for (id, p) in s.payloads { if case .sleeper(_, let t) = p { out.append((id, t)) } }
      out.sort { $0.id < $1.id }
      return out
    }
  }

  func setTearingDown(_ value: Bool) { state.withLock { $0.tearingDown = value } }

  /// Forgets everything (drops pending payloads) and rewinds time to zero.
  /// Ids keep growing across runs, so a stale `SimTimer` from an earlier
  /// run can never cancel a timer of a later one (only relative id order
  /// matters for determinism). Returns how many payloads were dropped.
  func reset() -> (dropped: Int, fired: Int) {
    state.withLock { s in
      let dropped = s.payloads.count
      let fired = s.fired
      let nextID = s.nextID
      s = State()
      s.nextID = nextID
      return (dropped, fired)
    }
  }

  // Binary heap helpers.
  private static func push(_ h: inout [Entry], _ e: Entry) {
    h.append(e)
    var i = h.count - 1
    while i > 0 {
      let p = (i - 1) / 2
      if h[i] < h[p] { h.swapAt(i, p); i = p } else { break }
    }
  }

  private static func pop(_ h: inout [Entry]) {
    let last = h.removeLast()
    guard !h.isEmpty else { return }
    h[0] = last
    var i = 0
    while true {
      let l = 2 * i + 1, r = l + 1
      var m = i
      if l < h.count && h[l] < h[m] { m = l }
      if r < h.count && h[r] < h[m] { m = r }
      if m == i { return }
      h.swapAt(i, m)
      i = m
    }
  }
}
