// DeterministicExecutor.swift — a seeded, single-threaded scheduler for Swift
// concurrency (FoundationDB / TigerBeetle-VOPR style simulation).
//
// Every job that the Swift runtime would hand to the global (Dispatch)
// executor or to the main executor is captured in a ready list instead, and
// `DeterministicExecutor.run` executes the jobs one at a time on the calling
// thread, choosing the next one with a seeded PRNG. One seed gives exactly
// one schedule. Simulated time lives in `SimClock.swift`.
//
// How jobs are captured on Swift 6.3 (Linux):
//
// 1. Runtime hooks (process-global function pointers exported by
//    libswift_Concurrency, found with `dlsym`, as pointfreeco's
//    `withMainSerialExecutor` does):
//    * `swift_task_enqueueGlobal_hook`: new tasks, task-group children,
//      continuation resumes, default-actor scheduling (an actor with work
//      schedules its "process" job here), hops off an actor.
//    * `swift_task_enqueueMainExecutor_hook`: main-executor jobs from code
//      that calls the runtime entry point (not used by 6.3's own hops).
//    * `swift_task_enqueueGlobalWithDelay_hook` /
//      `swift_task_enqueueGlobalWithDeadline_hook`: delayed jobs. The 6.3
//      standard library no longer uses them for `Task.sleep`, but older
//      binaries and other runtime paths can.
//    Installed at the start of each run; the old values go back at the end.
// 2. Replacement default and main executors (`Task.defaultExecutor`,
//    `MainActor.executor`), installed once per process with the
//    `@_spi(ExperimentalCustomExecutors)` `_createExecutors(factory:)` entry
//    point. In 6.3, `Task.yield()`, `Task.sleep` and hops to `@MainActor`
//    do NOT go through the hooks: they call the Swift executors' `enqueue`
//    (and the `SchedulingExecutor` `enqueue(_:at:tolerance:clock:)`)
//    directly, which would send the job to Dispatch. The replacements
//    capture during a run and forward to the platform executors otherwise.
// 3. A private serial executor that global jobs run "on" (by default, see
//    `Options.inlineExecutorSwitches`); tasks that suspend there are
//    enqueued back on it, and it captures them like the hooks.
//
// Jobs are run with `UnownedJob.runSynchronously(on:)` (= `swift_job_run`)
// on that private executor, or on the *generic* executor (a null
// `UnownedSerialExecutor`, what Dispatch uses for global jobs) when
// `inlineExecutorSwitches` is set; actor isolation is set up by the runtime
// itself when it drains a default actor. Main-actor jobs run on
// `MainActor.sharedUnownedExecutor`.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization
@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency

/// Deterministic single-threaded scheduler for Swift concurrency.
///
/// ```swift
/// let report = DeterministicExecutor.run(seed: 42) {
///   await myWorkload()          // actors, Task {}, task groups, SimClock...
/// }
/// precondition(report.outcome == .completed)
/// ```
///
/// One run at a time per process (concurrent callers wait their turn). `run`
/// blocks the calling thread, which becomes the *driving thread*: every
/// captured job runs on it. Jobs enqueued from any other thread during a run are
/// "foreign" (see `ForeignEnqueuePolicy`).
package enum DeterministicExecutor {

  // MARK: Public configuration and results

  /// What to do when code inside the simulation uses a real clock to sleep
  /// (`Task.sleep(for:)`, `Task.sleep(nanoseconds:)`, `ContinuousClock.sleep`,
  /// `SuspendingClock.sleep`, or the runtime's delayed-enqueue entry points).
  package enum RealSleepPolicy: Sendable, Equatable {
    /// Crash with a message naming the problem (default). Inject `SimClock`.
    case trap
    /// Put the wake-up job on simulated time. The delay is
    /// `deadline - realNow` measured when the runtime enqueues the wake-up
    /// job, rounded to the nearest `quantum` (relative delays from the
    /// delay hook are exact). Deterministic only if the real time between
    /// the caller reading `.now` and the enqueue stays below `quantum / 2`
    /// (normally sub-microsecond, but a preempted thread can exceed it).
    case mapToSimulatedTime(quantum: Duration)
  }

  /// What to do with a job enqueued from a thread other than the driving
  /// thread while a run is in progress (e.g. a continuation resumed from a
  /// Dispatch or NIO callback, or another test's tasks).
  package enum ForeignEnqueuePolicy: Sendable, Equatable {
    /// Crash with a message (default): the simulation is no longer closed.
    case trap
    /// Count it in `Report.foreignEnqueues` and hand it to the real
    /// executor (needed when other code, e.g. a test runner, shares the
    /// process). A simulation job forwarded this way escapes the schedule.
    case forward
  }

  /// Limits and policies for one run.
  package struct Options: Sendable {
    /// Stop after this many jobs (outcome `.stepLimit`).
    package var maxSteps: Int = 50_000_000
    /// Stop before simulated time would pass this (outcome `.timeLimit`).
    package var timeLimit: Duration? = nil
    /// `true`: stop as soon as the root operation has returned and no job is
    /// ready (pending timers are left to teardown). `false`: keep advancing
    /// simulated time until nothing at all is pending.
    package var stopWhenRootCompletes: Bool = true
    /// Jobs teardown may run to bring leftover tasks to an end.
    package var teardownMaxSteps: Int = 1_000_000
    /// `false` (default): global jobs run "on" a private serial executor
    /// instead of the generic one. `swift_job_run` then forbids inline
    /// executor switches from the job's starting context, so the first
    /// switch a job makes (a hop to an actor, even a free one, or a hop back
    /// to the generic executor when calling a nonisolated async function)
    /// enqueues the task and becomes a scheduling point. More interleavings:
    /// this exposes check-then-act races across two actor calls that `true`
    /// never shows; about 2.4x more jobs per run. Switches made inside an
    /// actor's drain job stay inline either way.
    /// `true`: the runtime's own fast path (as under Dispatch): a switch to a
    /// free actor or to the generic executor continues in the same job, so
    /// an uncontended `await actor.f()` is never a scheduling point.
    package var inlineExecutorSwitches: Bool = false
    package var realSleepPolicy: RealSleepPolicy = .trap
    package var foreignEnqueuePolicy: ForeignEnqueuePolicy = .trap
    package init() {}
  }

  /// How a run ended (before teardown).
  package enum Outcome: String, Sendable {
    /// The root operation returned.
    case completed
    /// Nothing ready, no timer pending, root not finished: every task is
    /// waiting for something that will never happen (a liveness bug).
    case deadlock
    case stepLimit
    case timeLimit
  }

  /// Statistics of one run.
  package struct Report: Sendable, CustomStringConvertible {
    package var seed: UInt64?
    package var outcome: Outcome = .completed
    /// Jobs run before teardown.
    package var steps = 0
    /// Jobs run during teardown.
    package var teardownSteps = 0
    /// Simulated time when the run stopped (before teardown).
    package var simulatedTime: Duration = .zero
    /// Timers fired (sleepers, scheduled actions, mapped real sleeps).
    package var timersFired = 0
    /// Jobs captured through `swift_task_enqueueGlobal_hook`.
    package var viaGlobalHook = 0
    /// Of `viaGlobalHook`: jobs that are not tasks. These are default-actor
    /// drain jobs: an idle actor that receives work schedules itself here.
    package var actorJobs = 0
    /// Jobs captured through `swift_task_enqueueMainExecutor_hook`.
    package var viaMainHook = 0
    /// Jobs captured by the replacement default executor (`Task.yield`...).
    package var viaDefaultExecutor = 0
    /// Jobs captured by the replacement main executor (hops to `@MainActor`).
    package var viaMainExecutor = 0
    /// Jobs enqueued on the private top-level executor (only with
    /// `inlineExecutorSwitches == false`: tasks resuming where they suspended).
    package var viaTopLevelExecutor = 0
    /// Real-clock sleeps put on simulated time (all routes).
    package var realSleepsMapped = 0
    /// Calls of the delay / deadline hooks.
    package var viaDelayHooks = 0
    /// Enqueues from other threads during the run (see ForeignEnqueuePolicy).
    package var foreignEnqueues = 0
    /// Sleeping tasks cancelled by teardown.
    package var sleepersCancelledAtTeardown = 0
    /// Ready jobs abandoned after the teardown budget (leaked tasks).
    package var droppedJobs = 0
    /// Timers abandoned after the teardown budget.
    package var droppedTimers = 0

    /// Jobs captured in total (every one of them ran or was dropped).
    package var jobsCaptured: Int {
      viaGlobalHook + viaMainHook + viaDefaultExecutor + viaMainExecutor + viaTopLevelExecutor + realSleepsMapped
    }

    package var description: String {
      "seed=\(seed.map(String.init) ?? "-") outcome=\(outcome.rawValue) steps=\(steps)+\(teardownSteps) "
        + "simTime=\(simulatedTime) timers=\(timersFired) captured[global=\(viaGlobalHook) (actor=\(actorJobs)) main=\(viaMainHook) "
        + "default=\(viaDefaultExecutor) mainExec=\(viaMainExecutor) topLevel=\(viaTopLevelExecutor) realSleep=\(realSleepsMapped) delayHooks=\(viaDelayHooks)] "
        + "foreign=\(foreignEnqueues) teardownCancelled=\(sleepersCancelledAtTeardown) "
        + "dropped[jobs=\(droppedJobs) timers=\(droppedTimers)]"
    }
  }

  // MARK: Public entry points

  /// Runs `root` under a schedule chosen by `SimRandom(seed:)`: each step
  /// picks uniformly among the ready jobs.
  @discardableResult
  package static func run(
    seed: UInt64, options: Options = Options(),
    _ root: @escaping @Sendable () async -> Void
  ) -> Report {
    var rng = SimRandom(seed: seed)
    var report = run(options: options, seed: seed, choose: { rng.next(below: $0) }, root)
    report.seed = seed
    return report
  }

  /// Runs `root` with a caller-supplied scheduling policy: `choose(n)` gets
  /// the number of ready jobs (n ≥ 1) and returns the index (0..<n) of the
  /// one to run next. Ready jobs are kept in enqueue order except that the
  /// chosen slot is refilled with the last job (swap-remove), so
  /// `{ _ in 0 }` is not FIFO; use `{ $0 - 1 }` for LIFO.
  @discardableResult
  package static func run(
    options: Options = Options(), choose: (Int) -> Int,
    _ root: @escaping @Sendable () async -> Void
  ) -> Report {
    run(options: options, seed: nil, choose: choose, root)
  }

  /// `true` while a run is in progress.
  package static var isRunning: Bool { drivingThread.load(ordering: .acquiring) != 0 }

  /// `true` when called on the driving thread of the current run.
  package static var isOnDrivingThread: Bool {
    let d = drivingThread.load(ordering: .acquiring)
    return d != 0 && d == currentThreadID()
  }

  /// Whether the process was started with `SWIFT_DETERMINISTIC_HASHING` set.
  /// Without it, `Set`/`Dictionary` iteration order depends on a per-process
  /// random seed *and* on the storage's heap address, so it can differ
  /// between two runs of the same seed in the same process. Code under test
  /// that iterates hashed collections needs it (it is read at startup:
  /// setting it later with `setenv` has no effect).
  package static var isHashingDeterministic: Bool {
    guard let v = getenv("SWIFT_DETERMINISTIC_HASHING") else { return false }
    return ["1", "true", "yes", "on"].contains(String(cString: v).lowercased())
  }

  /// The seed of the current run (`nil` outside `run(seed:)`).
  package static var currentSeed: UInt64? { isOnDrivingThread ? sim.seed : nil }

  /// Jobs run so far in the current run (a cheap logical timestamp).
  package static var currentStep: Int { isOnDrivingThread ? sim.steps : 0 }

  /// Installs the replacement default and main executors (for the rest of
  /// the process; outside a run they forward to the platform's Dispatch
  /// executors). `run` does this on first use; call it at process start,
  /// before other threads use concurrency, to avoid racing with them on
  /// `Task.defaultExecutor` / `MainActor.executor`.
  package static func installExecutors() {
    installLock.withLock { _ in
      if Task.defaultExecutor is SimDefaultExecutor { return }
      SimExecutorFactory.savedMain = SimMainExecutor(base: MainActor.executor)
      SimExecutorFactory.savedDefault = SimDefaultExecutor(base: Task.defaultExecutor)
      _createExecutors(factory: SimExecutorFactory.self)
      precondition(Task.defaultExecutor is SimDefaultExecutor && MainActor.executor is SimMainExecutor,
                   "DeterministicExecutor: could not replace the default and main executors")
    }
  }

  // MARK: - Internals

  struct ReadyJob {
    var job: UnownedJob
    var isMain: Bool
  }

  /// Runs global jobs when `Options.inlineExecutorSwitches == false`.
  static let topLevelExecutor = SimTopLevelExecutor()
  static let topLevelRef = topLevelExecutor.asUnownedSerialExecutor()

  /// Run state. Touched only on the driving thread (hooks check the thread
  /// before using it), so it needs no lock.
  final class State {
    var ready: ContiguousArray<ReadyJob> = []
    var steps = 0
    var seed: UInt64?
    var options = Options()
    var rootDone = false
    var report = Report()
    init() { ready.reserveCapacity(1024) }
  }

  nonisolated(unsafe) static let sim = State()
  /// Thread id of the driving thread; 0 when no run is in progress.
  static let drivingThread = Atomic<UInt>(0)
  static let foreignCount = Atomic<Int>(0)
  /// `options.foreignEnqueuePolicy == .trap`, readable from any thread.
  static let foreignTraps = Atomic<Bool>(true)
  static let installLock = Mutex(())
  static let runSerializer = Mutex(())

  /// `swift_job_run` with the generic executor (a null executor ref).
  static let genericExecutor = unsafeBitCast((UInt(0), UInt(0)), to: UnownedSerialExecutor.self)

  /// Test seam: when set, jobs reaching the default executor during a run
  /// are passed to it instead of being captured.
  nonisolated(unsafe) static var _divertDefaultExecutorJob: ((UnownedJob) -> Void)?

  @inline(__always)
  static func currentThreadID() -> UInt {
    #if canImport(Darwin)
    return UInt(bitPattern: pthread_self())
    #else
    return UInt(pthread_self())
    #endif
  }

  enum Route { case globalHook, mainHook, defaultExecutor, mainExecutor, topLevel }

  /// Captures `job` if a run is in progress on this thread. Returns `false`
  /// when the caller must forward it to the real executor.
  @inline(__always)
  static func capture(_ job: UnownedJob, isMain: Bool, route: Route) -> Bool {
    let d = drivingThread.load(ordering: .acquiring)
    if d == 0 { return false }
    if d != currentThreadID() { return foreign(route: "\(route)") }
    sim.ready.append(ReadyJob(job: job, isMain: isMain))
    switch route {
    case .globalHook:
      sim.report.viaGlobalHook += 1
      // Default actors schedule a non-task "process actor" job here.
      if ExecutorJob(job).kind != .task { sim.report.actorJobs += 1 }
    case .mainHook: sim.report.viaMainHook += 1
    case .defaultExecutor: sim.report.viaDefaultExecutor += 1
    case .mainExecutor: sim.report.viaMainExecutor += 1
    case .topLevel: sim.report.viaTopLevelExecutor += 1
    }
    return true
  }

  /// A job arrived from another thread during a run.
  static func foreign(route: String) -> Bool {
    foreignCount.add(1, ordering: .relaxed)
    if foreignTraps.load(ordering: .relaxed) {
      fatalError("""
        DeterministicExecutor: a job was enqueued (\(route)) from a thread other than the driving thread \
        during a simulation run. Something resumed a task from a real thread (Dispatch, NIO, a Thread, \
        a real timer...). The schedule would no longer be deterministic. Find the real I/O or timer, \
        or set Options.foreignEnqueuePolicy = .forward if other code legitimately shares the process.
        """)
    }
    return false
  }

  /// A real-clock sleep (or delayed enqueue) reached us. `delay` computes
  /// the delay in nanoseconds; `exact` says whether it is a relative value
  /// given by the caller (no real-clock reading involved).
  static func captureRealSleep(_ job: UnownedJob, isMain: Bool = false, what: String, exact: Bool,
                               delay: () -> Int64) -> Bool {
    let d = drivingThread.load(ordering: .acquiring)
    if d == 0 { return false }
    if d != currentThreadID() { return foreign(route: what) }
    switch sim.options.realSleepPolicy {
    case .trap:
      fatalError("""
        DeterministicExecutor: \(what) was called inside a simulation (delay ≈ \(Duration.nanoseconds(delay()))). \
        Real clocks make the schedule depend on wall time. Inject SimClock (e.g. \
        `try await SimClock().sleep(for: d)` or `Task.sleep(for: d, clock: SimClock())`), or set \
        Options.realSleepPolicy = .mapToSimulatedTime(quantum:).
        """)
    case .mapToSimulatedTime(let quantum):
      var ns = max(0, delay())
      if !exact {
        let q = max(1, quantum.simNanoseconds)
        ns = (ns + q / 2) / q * q
      }
      _ = simTimers.add(.job(job, isMain: isMain), deadline: simTimers.now &+ ns)
      sim.report.realSleepsMapped += 1
      return true
    }
  }

  // MARK: The run loop

  static func run(
    options: Options, seed: UInt64?, choose: (Int) -> Int,
    _ root: @escaping @Sendable () async -> Void
  ) -> Report {
    installExecutors()
    precondition(!isOnDrivingThread, "DeterministicExecutor.run called from inside a simulation (nested runs are not supported)")
    // One run at a time per process: a second thread waits here.
    return runSerializer.withLock { _ in runExclusive(options: options, seed: seed, choose: choose, root) }
  }

  static func runExclusive(
    options: Options, seed: UInt64?, choose: (Int) -> Int,
    _ root: @escaping @Sendable () async -> Void
  ) -> Report {
    let me = currentThreadID()
    foreignTraps.store(options.foreignEnqueuePolicy == .trap, ordering: .relaxed)
    drivingThread.store(me, ordering: .releasing)
    defer { drivingThread.store(0, ordering: .releasing) }

    sim.ready.removeAll(keepingCapacity: true)
    sim.steps = 0
    sim.seed = seed
    sim.options = options
    sim.rootDone = false
    sim.report = Report()
    foreignCount.store(0, ordering: .relaxed)
    _ = simTimers.reset()

    let saved = Hooks.install()
    defer { Hooks.restore(saved) }

    // Detached: must not inherit the caller's actor (e.g. @MainActor main.swift).
    let rootTask = Task.detached {
      await root()
      DeterministicExecutor.sim.rootDone = true
    }

    // Main phase.
    let limitNs = options.timeLimit?.simNanoseconds
    var outcome = Outcome.completed
    while true {
      if !sim.ready.isEmpty {
        if sim.steps >= options.maxSteps { outcome = .stepLimit; break }
        runOne(choose)
        sim.steps += 1
        continue
      }
      if sim.rootDone && options.stopWhenRootCompletes { outcome = .completed; break }
      guard let next = simTimers.nextDeadline() else {
        outcome = sim.rootDone ? .completed : .deadlock
        break
      }
      if let limitNs, next > limitNs { outcome = .timeLimit; break }
      fire(simTimers.takeDue(at: next))
    }
    sim.report.outcome = outcome
    sim.report.steps = sim.steps
    sim.report.simulatedTime = .nanoseconds(simTimers.now)

    // Teardown: cancel everything and let tasks run to their end, so that
    // nothing from this seed survives into the next one.
    simTimers.setTearingDown(true)
    rootTask.cancel()
    var budget = options.teardownMaxSteps
    var teardownSteps = 0
    while budget > 0 {
      if !sim.ready.isEmpty {
        runOne(choose)
        budget -= 1
        teardownSteps += 1
        continue
      }
      // Idle: really cancel every task still sleeping on SimClock (its
      // cancellation handler resumes it), then let simulated time move on
      // for the remaining timers (scheduled actions, mapped real sleeps).
      let sleepers = simTimers.sleepers()
      if !sleepers.isEmpty {
        for (id, task) in sleepers {
          sim.report.sleepersCancelledAtTeardown += 1
          if let task { task.task.cancel() } else { simTimers.cancelSleeper(id: id) }
        }
        continue
      }
      guard let next = simTimers.nextDeadline() else { break }
      fire(simTimers.takeDue(at: next))
    }
    sim.report.teardownSteps = teardownSteps
    sim.report.droppedJobs = sim.ready.count
    sim.ready.removeAll(keepingCapacity: true)
    let (droppedTimers, fired) = simTimers.reset()
    sim.report.droppedTimers = droppedTimers
    sim.report.timersFired = fired
    sim.report.foreignEnqueues = foreignCount.load(ordering: .relaxed)
    sim.options = Options()
    _divertDefaultExecutorJob = nil
    return sim.report
  }

  @inline(__always)
  static func runOne(_ choose: (Int) -> Int) {
    let n = sim.ready.count
    let i = n == 1 ? 0 : choose(n)
    precondition(i >= 0 && i < n, "DeterministicExecutor: choose(\(n)) returned \(i)")
    let entry = sim.ready[i]
    sim.ready[i] = sim.ready[n - 1]
    sim.ready.removeLast()
    if entry.isMain {
      entry.job.runSynchronously(on: MainActor.sharedUnownedExecutor)
    } else if sim.options.inlineExecutorSwitches {
      entry.job.runSynchronously(on: genericExecutor)
    } else {
      entry.job.runSynchronously(on: topLevelRef)
    }
  }

  static func fire(_ due: [SimTimerQueue.Payload]) {
    for payload in due {
      switch payload {
      case .job(let job, let isMain):
        sim.ready.append(ReadyJob(job: job, isMain: isMain))
      case .sleeper(let continuation, _):
        continuation.resume()  // enqueues the task through the hook
      case .action(let action):
        action()
      }
    }
  }
}

// MARK: - Runtime hooks

enum Hooks {
  typealias EnqueueOriginal = @convention(thin) (UnownedJob) -> Void
  typealias EnqueueHook = @convention(thin) (UnownedJob, EnqueueOriginal) -> Void
  typealias DelayOriginal = @convention(thin) (UInt64, UnownedJob) -> Void
  typealias DelayHook = @convention(thin) (UInt64, UnownedJob, DelayOriginal) -> Void
  typealias DeadlineOriginal = @convention(thin) (Int64, Int64, Int64, Int64, Int32, UnownedJob) -> Void
  typealias DeadlineHook = @convention(thin) (Int64, Int64, Int64, Int64, Int32, UnownedJob, DeadlineOriginal) -> Void

  static func symbol<T>(_ name: String, as: T.Type) -> UnsafeMutablePointer<T> {
    guard let p = dlsym(nil, name) else {  // nil == RTLD_DEFAULT
      fatalError("DeterministicExecutor: runtime hook \(name) not found via dlsym (statically linked stdlib without -rdynamic?)")
    }
    return p.assumingMemoryBound(to: T.self)
  }

  nonisolated(unsafe) static let global = symbol("swift_task_enqueueGlobal_hook", as: EnqueueHook?.self)
  nonisolated(unsafe) static let main = symbol("swift_task_enqueueMainExecutor_hook", as: EnqueueHook?.self)
  nonisolated(unsafe) static let delay = symbol("swift_task_enqueueGlobalWithDelay_hook", as: DelayHook?.self)
  nonisolated(unsafe) static let deadline = symbol("swift_task_enqueueGlobalWithDeadline_hook", as: DeadlineHook?.self)

  struct Saved {
    var global: EnqueueHook?
    var main: EnqueueHook?
    var delay: DelayHook?
    var deadline: DeadlineHook?
  }

  static func install() -> Saved {
    let saved = Saved(global: global.pointee, main: main.pointee, delay: delay.pointee, deadline: deadline.pointee)
    global.pointee = { job, original in
      if !DeterministicExecutor.capture(job, isMain: false, route: .globalHook) { original(job) }
    }
    main.pointee = { job, original in
      if !DeterministicExecutor.capture(job, isMain: true, route: .mainHook) { original(job) }
    }
    delay.pointee = { ns, job, original in
      if !Hooks.captureDelayed(ns, job) { original(ns, job) }
    }
    deadline.pointee = { sec, nsec, tsec, tnsec, clock, job, original in
      if !Hooks.captureDeadline(sec, nsec, clock, job) { original(sec, nsec, tsec, tnsec, clock, job) }
    }
    return saved
  }

  static func captureDelayed(_ ns: UInt64, _ job: UnownedJob) -> Bool {
    if DeterministicExecutor.isOnDrivingThread { DeterministicExecutor.sim.report.viaDelayHooks += 1 }
    return DeterministicExecutor.captureRealSleep(
      job, what: "swift_task_enqueueGlobalWithDelay", exact: true, delay: { Int64(clamping: ns) })
  }

  static func captureDeadline(_ sec: Int64, _ nsec: Int64, _ clock: Int32, _ job: UnownedJob) -> Bool {
    if DeterministicExecutor.isOnDrivingThread { DeterministicExecutor.sim.report.viaDelayHooks += 1 }
    return DeterministicExecutor.captureRealSleep(
      job, what: "swift_task_enqueueGlobalWithDeadline", exact: false,
      delay: { realDelay(seconds: sec, nanoseconds: nsec, clockID: clock) })
  }

  static func restore(_ s: Saved) {
    global.pointee = s.global
    main.pointee = s.main
    delay.pointee = s.delay
    deadline.pointee = s.deadline
  }

  /// Nanoseconds from now until an absolute deadline of the runtime's clock
  /// ids (1 = continuous, 2 = suspending).
  static func realDelay(seconds: Int64, nanoseconds: Int64, clockID: Int32) -> Int64 {
    let sinceEpoch = Duration.seconds(seconds) + .nanoseconds(nanoseconds)
    switch clockID {
    case 2:
      let c = SuspendingClock()
      return c.now.duration(to: c.systemEpoch.advanced(by: sinceEpoch)).simNanoseconds
    default:
      let c = ContinuousClock()
      return c.now.duration(to: c.systemEpoch.advanced(by: sinceEpoch)).simNanoseconds
    }
  }
}

// MARK: - Replacement default executor

/// Installed as `Task.defaultExecutor`. During a run it captures what 6.3
/// sends straight to the default executor (`Task.yield()`, the wake-up job
/// of `Task.sleep`); otherwise it forwards to the platform executor.
final class SimDefaultExecutor: TaskExecutor, SchedulingExecutor, @unchecked Sendable {
  let base: any TaskExecutor
  let baseScheduling: (any SchedulingExecutor)?

  init(base: any TaskExecutor) {
    self.base = base
    self.baseScheduling = base as? any SchedulingExecutor
  }

  func enqueue(_ job: consuming ExecutorJob) {
    let unowned = UnownedJob(job)
    if let divert = DeterministicExecutor._divertDefaultExecutorJob, DeterministicExecutor.isOnDrivingThread {
      divert(unowned)
      return
    }
    if !DeterministicExecutor.capture(unowned, isMain: false, route: .defaultExecutor) {
      base.enqueue(ExecutorJob(unowned))
    }
  }

  func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration,
                         tolerance: C.Duration?, clock: C) {
    let unowned = UnownedJob(job)
    let isSwiftDuration = delay is Duration
    if !DeterministicExecutor.captureRealSleep(
      unowned, what: "a real-clock sleep (\(C.self), relative delay)", exact: isSwiftDuration,
      delay: { (delay as? Duration)?.simNanoseconds ?? 0 }) {
      forward(ExecutorJob(unowned), after: delay, tolerance: tolerance, clock: clock)
    }
  }

  func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant,
                         tolerance: C.Duration?, clock: C) {
    let unowned = UnownedJob(job)
    if !DeterministicExecutor.captureRealSleep(
      unowned, what: "Task.sleep / \(C.self).sleep (real clock)", exact: false,
      delay: { (clock.now.duration(to: instant) as? Duration)?.simNanoseconds ?? 0 }) {
      forward(ExecutorJob(unowned), at: instant, tolerance: tolerance, clock: clock)
    }
  }

  private func forward<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration,
                                 tolerance: C.Duration?, clock: C) {
    guard let s = baseScheduling else { fatalError("platform default executor cannot schedule") }
    s.enqueue(job, after: delay, tolerance: tolerance, clock: clock)
  }

  private func forward<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant,
                                 tolerance: C.Duration?, clock: C) {
    guard let s = baseScheduling else { fatalError("platform default executor cannot schedule") }
    s.enqueue(job, at: instant, tolerance: tolerance, clock: clock)
  }
}

/// Installed as `MainActor.executor`. In 6.3 a hop to `@MainActor` calls the
/// main executor's Swift `enqueue` directly (the main-executor hook is not
/// consulted), so the wrapper captures main-actor jobs during a run and
/// forwards to the platform main executor (Dispatch main queue) otherwise.
final class SimMainExecutor: MainExecutor, SchedulingExecutor, @unchecked Sendable {
  let base: any MainExecutor
  let baseScheduling: (any SchedulingExecutor)?

  init(base: any MainExecutor) {
    self.base = base
    self.baseScheduling = base as? any SchedulingExecutor
  }

  func run() throws { try base.run() }
  func stop() { base.stop() }
  var isMainExecutor: Bool { true }
  func checkIsolated() { base.checkIsolated() }

  func enqueue(_ job: consuming ExecutorJob) {
    let unowned = UnownedJob(job)
    if !DeterministicExecutor.capture(unowned, isMain: true, route: .mainExecutor) {
      base.enqueue(ExecutorJob(unowned))
    }
  }

  func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant,
                         tolerance: C.Duration?, clock: C) {
    let unowned = UnownedJob(job)
    if !DeterministicExecutor.captureRealSleep(
      unowned, isMain: true, what: "Task.sleep / \(C.self).sleep (real clock, main actor)", exact: false,
      delay: { (clock.now.duration(to: instant) as? Duration)?.simNanoseconds ?? 0 }) {
      guard let s = baseScheduling else { fatalError("platform main executor cannot schedule") }
      s.enqueue(ExecutorJob(unowned), at: instant, tolerance: tolerance, clock: clock)
    }
  }
}

/// The serial executor that global jobs run "on" when
/// `Options.inlineExecutorSwitches == false`. Being non-generic, it makes
/// `swift_job_run` disallow inline executor switches. Tasks that suspend
/// while on it (continuations record the current executor) are enqueued back
/// here, so it captures like the hooks.
final class SimTopLevelExecutor: SerialExecutor, @unchecked Sendable {
  func enqueue(_ job: consuming ExecutorJob) {
    let unowned = UnownedJob(job)
    if !DeterministicExecutor.capture(unowned, isMain: false, route: .topLevel) {
      // Outside a run nothing should be bound to this executor; run it on
      // the real global executor rather than losing it.
      Task.defaultExecutor.enqueue(ExecutorJob(unowned))
    }
  }
}

/// Factory handed to `_createExecutors`: keeps the current main executor and
/// wraps the platform default executor.
struct SimExecutorFactory: ExecutorFactory {
  nonisolated(unsafe) static var savedMain: (any MainExecutor)?
  nonisolated(unsafe) static var savedDefault: (any TaskExecutor)?
  static var mainExecutor: any MainExecutor { savedMain! }
  static var defaultExecutor: any TaskExecutor { savedDefault! }
}

// MARK: - PRNG
