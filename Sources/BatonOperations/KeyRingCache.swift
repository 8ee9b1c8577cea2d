import BatonCore
import BatonStorage
import BatonSync
import Glibc
import Synchronization

/// This process's copy of the token key ring: the codecs that make and check tokens, read
/// without a lock on every request, and replaced when the ring in the database changed
/// (docs/design.md, "The token key ring").
///
/// No request ever reads the ring (issue 43, finding 1: a made-up token naming an unknown key
/// id used to make its request read the ring again, under one lock, and every event loop
/// queued behind it). A watcher thread reads it every `Timing.pollInterval` instead, and two
/// rules make that enough:
/// - **Known everywhere before it mints.** A key mints only once this process has known it for
///   `Timing.activationDelay` (from the end of the read that first saw it, so after the key's
///   commit). Every other instance whose copy is younger than that delay has read the ring
///   after the commit, so it knows every key any instance mints with.
/// - **An unknown key id is decided from memory.** A token naming a key above every one known
///   is refused (`token_invalid`) when this copy is younger than the delay: no instance can
///   have minted with that key yet. When the copy is older (the watcher could not read the
///   database), this process cannot tell, and answers `unavailable` (retry) rather than end
///   an honest session; it never reads the ring for the request.
///
/// A snapshot is an immutable object behind an atomic pointer, published only when the ring
/// read differs from the current one (a rotation or a retirement), and never freed, so a reader
/// never holds a freed one: one small object per ring change for the life of the process.
package final class KeyRingCache: Sendable {
    /// How the ring is kept current; the defaults are the service's, the simulation replaces
    /// the clock and reads the ring itself.
    package struct Timing: Sendable {
        /// How often the watcher reads the ring.
        package var pollInterval: Duration = .seconds(1)
        /// How long this process knows a key before it mints with it (and how young a copy
        /// must be to refuse an unknown key id).
        package var activationDelay: Duration = .seconds(2)
        /// How far apart instances' wall clocks may be: at a process's first read, a key whose
        /// row is older than `activationDelay` plus this is taken as known everywhere already.
        package var clockSkewAllowance: Duration = .seconds(30)
        /// Whether a watcher thread reads the ring (the simulation drives its one store itself).
        package var watches = true
        /// Monotonic nanoseconds (CLOCK_MONOTONIC; the simulation's clock in the simulation).
        package var monotonicNow: @Sendable () -> Int64 = KeyRingCache.monotonicNow
        package init() {}
    }

    /// How long after its successor was added a key may be retired: every instance has read
    /// the ring since and mints with the successor (poll + activation, and a margin).
    package static let retireAfter: Duration = .seconds(5)

    /// The key file's key: key 0 (`bt1_` tokens), and the root every ring key is wrapped under.
    package let fileKey: TokenKey
    package let timing: Timing
    private let current: Atomic<Int>  // an Unmanaged<Snapshot>'s bits; snapshots are never freed
    /// Monotonic ns when the last read that succeeded started (`Int64.min / 2`: never).
    private let lastRead = Atomic<Int64>(Int64.min / 2)
    /// Reads of the ring since this process started (`/metrics`).
    private let readCount = Atomic<Int>(0)
    /// Serializes reads (the watcher's and the admin operations'), so snapshots publish in order.
    private let reading = Locked<Void>(())
    private let watcher = Watcher()

    /// The watcher thread's state, under its condition lock (which it sleeps on).
    private final class Watcher: @unchecked Sendable {
        let lock = ConditionLock()
        var started = false
        var stopped = false
    }

    private final class Snapshot: Sendable {
        let rows: [TokenKeyRow]
        /// Monotonic ns from which this process may mint with each key, by id (not retired ones).
        let mintsFrom: [UInt32: Int64]
        /// A codec per key not retired, minting with that key; all authenticate the same keys.
        let codecs: [UInt32: TokenCodec]
        /// The codec of the newest key: for authentication, and when no key may mint yet.
        let newest: TokenCodec
        /// The ids of `codecs`, oldest first (sorted once, not at every mint).
        let ids: [UInt32]

        init(rows: [TokenKeyRow], mintsFrom: [UInt32: Int64], codecs: [UInt32: TokenCodec]) {
            self.rows = rows
            self.mintsFrom = mintsFrom
            self.codecs = codecs
            ids = codecs.keys.sorted()
            newest = codecs[ids.last!]!
        }

        /// The key that mints at `now`: the newest known long enough; if none is yet (a first
        /// read just after a rotation), the oldest key not retired, the one every instance knows.
        func mintingKeyID(at now: Int64) -> UInt32 {
            ids.last { mintsFrom[$0, default: .max] <= now } ?? ids[0]
        }
    }

    /// A ring of the key file's key alone, until the first read.
    package init(fileKey: TokenKey, timing: Timing = Timing()) {
        self.fileKey = fileKey
        self.timing = timing
        let snapshot = Snapshot(rows: [], mintsFrom: [0: Int64.min / 2], codecs: [0: TokenCodec(key: fileKey)])
        current = Atomic(Int(bitPattern: Unmanaged.passRetained(snapshot).toOpaque()))
    }

    private var snapshot: Snapshot {
        Unmanaged<Snapshot>.fromOpaque(UnsafeRawPointer(bitPattern: current.load(ordering: .acquiring))!).takeUnretainedValue()
    }

    /// The codec to make tokens with now (`Snapshot.mintingKeyID`).
    package var mintingCodec: TokenCodec {
        let snapshot = snapshot
        return snapshot.codecs[snapshot.mintingKeyID(at: timing.monotonicNow())]!
    }

    /// A codec that authenticates every key of the ring as last read.
    package var codec: TokenCodec { snapshot.newest }

    /// When the key new tokens are made with was created (row 0: when the database recorded
    /// the key file's fingerprint), as last read; nil before the first read.
    package var mintingKeyCreatedAt: Instant? {
        let snapshot = snapshot
        let id = snapshot.mintingKeyID(at: timing.monotonicNow())
        return snapshot.rows.first { $0.id == id }?.createdAt
    }

    /// Reads of the ring since this process started.
    package var reads: Int { readCount.load(ordering: .relaxed) }

    /// The claims of `token` if its MAC verifies under a key of the ring; nil when it does not
    /// (forged, malformed, a retired key, or a key id no instance can mint with yet). Never
    /// reads the database.
    /// - Throws: `.unavailable` for a token naming an unknown key while this copy is too old
    ///   to say that no instance mints with it (the watcher cannot read the database).
    package func authenticate(_ token: String) throws(BatonError) -> PresentedToken? {
        let codec = snapshot.newest
        if let presented = codec.authenticate(token) { return presented }
        guard codec.namesNewerKey(token) else { return nil }
        let age = timing.monotonicNow() - lastRead.load(ordering: .relaxed)
        guard age > timing.activationDelay.nanoseconds * 3 / 4 else { return nil }
        watcher.lock.signal()  // read now rather than at the next interval
        throw .unavailable("the token key ring was last read \(max(0, age) / 1_000_000_000) s ago; retry shortly")
    }

    /// The codecs for `rows` (the whole ring, by id) under `fileKey`: every key not retired
    /// authenticates; one codec per such key, minting with it. Key 0 is the file's own key,
    /// retired when row 0 says so.
    /// - Throws: `.unavailable` naming the first key that does not unwrap (the database was
    ///   altered, or its ring belongs to another key file).
    package static func codecs(for rows: [TokenKeyRow], fileKey: TokenKey) throws(BatonError) -> [UInt32: TokenCodec] {
        var keys: [UInt32: TokenKey] = [:]
        if rows.first(where: { $0.id == 0 })?.retiredAt == nil { keys[0] = fileKey }
        for row in rows where row.id != 0 && row.retiredAt == nil {
            guard let wrapped = row.wrapped, let key = KeyWrap.unwrap(wrapped, id: row.id, under: fileKey) else {
                throw .unavailable("token key \(row.id) (fingerprint \(row.fingerprint.prefix(16))) does not unwrap under the key file's key: the database's token_keys table was altered or belongs to another key file")
            }
            keys[row.id] = key
        }
        guard !keys.isEmpty else {
            throw .unavailable("every token key is retired: the database's token_keys table was altered")
        }
        let newestKnown = rows.map(\.id).max() ?? 0
        var codecs: [UInt32: TokenCodec] = [:]
        for id in keys.keys { codecs[id] = TokenCodec(keys: keys, minting: id, newestKnown: newestKnown) }
        return codecs
    }

    /// Reads the ring with `load` and publishes it; `load` returning nil (the database
    /// unavailable) keeps the current copy, and the next read tries again. `wallNow` dates a
    /// first read's keys (`Timing.clockSkewAllowance`).
    /// - Throws: `codecs(for:fileKey:)`'s error; the current copy stays.
    package func reload(wallNow: Instant, _ load: () -> [TokenKeyRow]?) throws(BatonError) {
        let outcome = reading.withLock { _ -> BatonError? in
            let start = timing.monotonicNow()
            guard let rows = load() else { return nil }
            readCount.add(1, ordering: .relaxed)
            let end = timing.monotonicNow()
            let old = snapshot
            if rows != old.rows {
                do throws(BatonError) {
                    let codecs = try Self.codecs(for: rows, fileKey: fileKey)
                    let isFirstRead = lastRead.load(ordering: .relaxed) == Int64.min / 2
                    let settled = wallNow - (timing.activationDelay + timing.clockSkewAllowance)
                    var mintsFrom: [UInt32: Int64] = [:]
                    for row in rows where codecs[row.id] != nil {
                        if let known = old.mintsFrom[row.id] {
                            mintsFrom[row.id] = known
                        } else if isFirstRead && row.createdAt <= settled {
                            mintsFrom[row.id] = Int64.min / 2
                        } else {
                            mintsFrom[row.id] = end + timing.activationDelay.nanoseconds
                        }
                    }
                    if rows.isEmpty { mintsFrom[0] = Int64.min / 2 }
                    let published = Unmanaged.passRetained(Snapshot(rows: rows, mintsFrom: mintsFrom, codecs: codecs)).toOpaque()
                    current.store(Int(bitPattern: published), ordering: .releasing)
                } catch {
                    return error
                }
            }
            lastRead.store(start, ordering: .relaxed)
            return nil
        }
        if let outcome { throw outcome }
    }

    /// Starts the watcher thread: `read` every `Timing.pollInterval` until `stopWatching`, or
    /// until `read` returns false (its store is gone); nothing when `Timing.watches` is off, or
    /// when it runs already.
    package func startWatching(_ read: @escaping @Sendable () -> Bool) {
        guard timing.watches else { return }
        let watcher = self.watcher
        let start = watcher.lock.withLock { () -> Bool in
            defer { watcher.started = true }
            return !watcher.started && !watcher.stopped
        }
        guard start else { return }
        let interval = Int(timing.pollInterval.nanoseconds / 1_000_000)
        spawn(stackSize: nil) {
            while true {
                let stopped = watcher.lock.withLock { () -> Bool in
                    if !watcher.stopped { watcher.lock.wait(milliseconds: interval) }
                    return watcher.stopped
                }
                if stopped || !read() { return }
            }
        }
    }

    /// Stops the watcher (before the store closes); it reads nothing after this returns but
    /// a read in progress.
    package func stopWatching() {
        _ = watcher.lock.raise(&watcher.stopped)
    }

    /// CLOCK_MONOTONIC in nanoseconds.
    @Sendable package static func monotonicNow() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}

extension Duration {
    /// The whole nanoseconds of this duration.
    fileprivate var nanoseconds: Int64 {
        let parts = components
        return parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000
    }
}
