import BatonCore
import BatonStorage
import BatonStore
import Glibc

/// Real operations on a real store (`TokenStore`, Baton's SQLite store) through the
/// recording VFS, one at a time, each acknowledgement marked in the log: logins, exchanges,
/// reuses (which revoke the chain and queue webhook events), logouts, revocations by the
/// operator, key rotations. What each acknowledgement promised is kept for `CrashCheck`.
package struct CrashWorkload {
    /// What an acknowledged operation promised about the database.
    package enum Promise: Sendable, Equatable {
        /// A login: the chain exists, `token` is its head, and the outbox holds its
        /// `login.new_device` event (every login here is from a new device).
        case issued(chain: ChainID, token: String)
        /// `parent` was exchanged: `child` is the head; `parent` never verifies again.
        case exchanged(chain: ChainID, parent: String, child: String)
        /// The chain is revoked for good (a logout, the operator, a detected reuse), and the
        /// outbox holds its webhook events (`chain.revoked`, and `token.reuse_detected` for a reuse).
        case revoked(chain: ChainID, reuse: Bool)
        /// The ring holds this key.
        case keyRotated(UInt32)

        /// The chain the operation acted on; nil for a rotation.
        package var chain: ChainID? {
            switch self {
            case .issued(let chain, _), .exchanged(let chain, _, _), .revoked(let chain, _): chain
            case .keyRotated: nil
            }
        }
    }

    /// How the store is opened: Baton's settings, or a mutant's.
    package enum Mutant: String, Sendable, CaseIterable {
        /// `PRAGMA synchronous=NORMAL`: the WAL is not synced at each commit.
        case synchronousNormal = "synchronous-normal"
    }

    /// What each step's acknowledgement promised, in order (every step completes: the crash
    /// comes later, in the states built from the log).
    package var steps: [Promise] = []
    package var log = CrashLog(operations: [], data: [], files: [])
    /// The files as they were, durably, before the log began (the database after its setup).
    package var baseline: [String: [UInt8]] = [:]
    package let directory: String
    package let key: TokenKey

    static let users = ["ana", "bo", "cy"]
    static let password = "crash harness password"

    /// Store options for the harness: cheap password hashes; checkpoints made by the writer
    /// between two commits once the WAL holds 24 frames (never by the background thread, whose
    /// timing is not the seed's), so that crash states fall inside checkpoints too.
    package static func options(mutant: Mutant?, create: Bool) -> TokenStore.Options {
        var options = TokenStore.Options()
        options.create = create
        options.hashParameters.memoryKiB = 64
        options.hashParameters.iterations = 1
        options.hashConcurrency = 1
        options.rememberedRows = 1024
        options.keyRing.watches = false
        options.keyRing.activationDelay = .zero
        options.checkpoints.passiveEvery = 1 << 30
        options.checkpoints.idleAfter = .seconds(3600)
        options.checkpoints.restartAt = 24
        options.checkpoints.catchUpAt = 24
        if mutant == .synchronousNormal { options.synchronous = .normal }
        return options
    }

    /// Runs `stepCount` seeded steps in `directory` (which must be empty).
    package init(directory: String, seed: UInt64, stepCount: Int, mutant: Mutant?, make: Bool = false) throws {
        if make, mkdir(directory, 0o700) != 0 { throw CrashFailure("cannot make \(directory): \(String(cString: strerror(errno)))") }
        self.directory = directory
        let database = directory + "/baton.db"
        key = try KeyFile.load(at: KeyFile.defaultPath(forDatabase: database), create: true)
        var policy = Policy()
        policy.maxChainsPerUser = 0
        do {  // the setup: the users, durably, before anything is recorded
            let store = try TokenStore(path: database, key: key, policy: policy, options: Self.options(mutant: mutant, create: true))
            for user in Self.users { _ = try store.createUser(user, password: Self.password) }
            store.close()
        }
        for name in (try? Self.names(in: directory)) ?? [] where !name.hasSuffix(".key") {
            baseline[name] = try Self.read(directory + "/" + name)
        }
        var random = CrashRandom(seed: seed)
        CrashRecorder.start(directory: directory)
        let store = try TokenStore(path: database, key: key, policy: policy, options: Self.options(mutant: mutant, create: false))
        // Each live chain's head token and the tokens it consumed; the live chains in login
        // order (chain ids are random, so sorting them would make the seed's choices differ
        // from run to run).
        var heads: [ChainID: String] = [:]
        var order: [ChainID] = []
        var consumed: [ChainID: [String]] = [:]
        var devices = 0
        for number in 0..<stepCount {
            let step: Promise
            let live = order.filter { heads[$0] != nil }
            let roll = Int.random(in: 0..<100, using: &random)
            do {
                if live.isEmpty || roll < 22 {
                    devices += 1
                    let user = Self.users[Int.random(in: 0..<Self.users.count, using: &random)]
                    let bundle = try store.login(LoginRequest(username: user, password: Self.password, deviceID: "device-\(devices)"))
                    heads[bundle.chainID] = bundle.token
                    order.append(bundle.chainID)
                    step = .issued(chain: bundle.chainID, token: bundle.token)
                } else if roll < 70 {
                    let chain = live[Int.random(in: 0..<live.count, using: &random)]
                    let parent = heads[chain]!
                    let bundle = try store.exchange(parent)
                    heads[chain] = bundle.token
                    consumed[chain, default: []].append(parent)
                    step = .exchanged(chain: chain, parent: parent, child: bundle.token)
                } else if roll < 80, let chain = live.first(where: { consumed[$0] != nil }) {
                    do {
                        _ = try store.exchange(consumed[chain]!.last!)
                        throw CrashFailure("a reuse of a consumed token was accepted")
                    } catch BatonError.tokenReused {
                        heads[chain] = nil
                        step = .revoked(chain: chain, reuse: true)
                    }
                } else if roll < 93 {  // a logout, or the operator's revocation
                    let chain = live[Int.random(in: 0..<live.count, using: &random)]
                    if roll < 87 {
                        try store.logout(heads[chain]!)
                    } else {
                        guard try store.revokeChain(chain, note: "crash harness") else { throw CrashFailure("revoking a live chain revoked nothing") }
                    }
                    heads[chain] = nil
                    step = .revoked(chain: chain, reuse: false)
                } else {
                    step = .keyRotated(try store.rotateKey(context: .admin).id)
                }
            } catch {
                store.close()
                _ = CrashRecorder.stop()
                throw error as? CrashFailure ?? CrashFailure("step \(number) failed before any crash: \(error)")
            }
            CrashRecorder.mark(number)
            steps.append(step)
        }
        store.close()  // the last checkpoint and the WAL's removal are in the log too
        log = CrashRecorder.stop()
    }

    static func names(in directory: String) throws -> [String] {
        guard let handle = opendir(directory) else { throw CrashFailure("cannot list \(directory)") }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    static func read(_ path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CrashFailure("cannot read \(path)") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        return bytes
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CrashFailure("cannot write \(path)") }
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw CrashFailure("short write to \(path)") }
    }
}

/// A harness failure that is not a finding (a step that should not fail did).
package struct CrashFailure: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
