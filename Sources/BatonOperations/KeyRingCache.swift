import BatonCore
import BatonStorage
import BatonSync
import Glibc
import Synchronization

/// This process's copy of the token key ring: the codec that makes and checks tokens, read
/// without a lock on every request, and replaced when the ring in the database changed
/// (docs/design.md, "The token key ring").
///
/// The codec is an immutable snapshot behind an atomic pointer. A new snapshot is published
/// only when the ring read differs from the current one (a rotation or a retirement), and the
/// old one is never freed, so a reader never holds a freed one: one small object per ring
/// change for the life of the process.
///
/// When it is read again (`LineageBackend+Keys`): before a login or an exchange mints, once the
/// copy is older than `refreshInterval` (so `rotate` returning is at most that long before every
/// instance mints with the new key), and whenever a presented `bt2_` token names a key id above
/// every one known (another instance may already mint with a key added since). Reloads run one
/// at a time, at least `minimumSpacing` apart, and one that started after a request arrived
/// serves it: a flood of forged tokens costs at most one small read per `minimumSpacing`.
package final class KeyRingCache: Sendable {
    /// How old the copy may get before a mint reads the ring again.
    package static let refreshInterval: Duration = .seconds(2)
    /// How long after its successor was added a key may be retired: every instance has read
    /// the ring since and mints with the successor (twice `refreshInterval`, and a margin).
    package static let retireAfter: Duration = .seconds(5)
    /// The least time between two reloads.
    package static let minimumSpacing: Duration = .milliseconds(10)

    /// The key file's key: key 0 (`bt1_` tokens), and the root every ring key is wrapped under.
    package let fileKey: TokenKey
    private let current: Atomic<Int>  // an Unmanaged<Snapshot>'s bits; snapshots are never freed
    private let loadedAt = Atomic<Int64>(Int64.min / 2)  // monotonic ns when the copy was last read
    /// Monotonic ns when the last reload started, and when the last one that read the ring started.
    private let reloads = Locked<(attempt: Int64, success: Int64)>((Int64.min / 2, Int64.min / 2))

    private final class Snapshot: Sendable {
        let codec: TokenCodec
        let rows: [TokenKeyRow]
        init(codec: TokenCodec, rows: [TokenKeyRow]) {
            self.codec = codec
            self.rows = rows
        }
    }

    /// A ring of the key file's key alone, until the first read.
    package init(fileKey: TokenKey) {
        self.fileKey = fileKey
        let snapshot = Snapshot(codec: TokenCodec(key: fileKey), rows: [])
        current = Atomic(Int(bitPattern: Unmanaged.passRetained(snapshot).toOpaque()))
    }

    /// The codec of the ring as last read.
    package var codec: TokenCodec { snapshot.codec }

    /// When the key new tokens are made with was created (row 0: when the database recorded
    /// the key file's fingerprint), as last read; nil before the first read.
    package var mintingKeyCreatedAt: Instant? {
        let rows = snapshot.rows
        return rows.filter { $0.retiredAt == nil }.max { $0.id < $1.id }?.createdAt
    }

    private var snapshot: Snapshot {
        Unmanaged<Snapshot>.fromOpaque(UnsafeRawPointer(bitPattern: current.load(ordering: .acquiring))!).takeUnretainedValue()
    }

    /// The codec for `rows` (the whole ring, by id) under `fileKey`: every key not retired
    /// authenticates, the newest of them mints. Key 0 is the file's own key, retired when row 0
    /// says so.
    /// - Throws: `.unavailable` naming the first key that does not unwrap (the database was
    ///   altered, or its ring belongs to another key file).
    package static func codec(for rows: [TokenKeyRow], fileKey: TokenKey) throws(BatonError) -> TokenCodec {
        var keys: [UInt32: TokenKey] = [:]
        if rows.first(where: { $0.id == 0 })?.retiredAt == nil { keys[0] = fileKey }
        for row in rows where row.id != 0 && row.retiredAt == nil {
            guard let wrapped = row.wrapped, let key = KeyWrap.unwrap(wrapped, id: row.id, under: fileKey) else {
                throw .unavailable("token key \(row.id) (fingerprint \(row.fingerprint.prefix(16))) does not unwrap under the key file's key: the database's token_keys table was altered or belongs to another key file")
            }
            keys[row.id] = key
        }
        guard let minting = keys.keys.max() else {
            throw .unavailable("every token key is retired: the database's token_keys table was altered")
        }
        return TokenCodec(keys: keys, minting: minting, newestKnown: rows.map(\.id).max() ?? 0)
    }

    /// Whether the copy is older than `refreshInterval`.
    package var isStale: Bool { Self.monotonicNow() - loadedAt.load(ordering: .relaxed) > Self.refreshInterval.nanoseconds }

    /// When the copy became stale (or becomes): a reload started after it serves every caller.
    package var staleSince: Int64 { loadedAt.load(ordering: .relaxed) + Self.refreshInterval.nanoseconds }

    /// Reads the ring with `load` and publishes it, unless a reload that started at or after
    /// `requestedAt` (monotonic ns) already read it; `load` returning nil (the database
    /// unavailable) keeps the current copy, and the next call tries again.
    /// - Throws: `codec(for:fileKey:)`'s error; the current copy stays.
    package func reload(requestedAt: Int64, _ load: () -> [TokenKeyRow]?) throws(BatonError) {
        let outcome = reloads.withLock { (state: inout (attempt: Int64, success: Int64)) -> BatonError? in
            guard state.success < requestedAt else { return nil }
            let wait = state.attempt + Self.minimumSpacing.nanoseconds - Self.monotonicNow()
            if wait > 0 { usleep(UInt32(wait / 1000)) }
            let start = Self.monotonicNow()
            state.attempt = start
            guard let rows = load() else { return nil }
            if rows != snapshot.rows {
                do throws(BatonError) {
                    let codec = try Self.codec(for: rows, fileKey: fileKey)
                    let published = Unmanaged.passRetained(Snapshot(codec: codec, rows: rows)).toOpaque()
                    current.store(Int(bitPattern: published), ordering: .releasing)
                } catch {
                    return error
                }
            }
            state.success = start
            loadedAt.store(start, ordering: .relaxed)
            return nil
        }
        if let outcome { throw outcome }
    }

    /// CLOCK_MONOTONIC in nanoseconds.
    package static func monotonicNow() -> Int64 {
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
