import BatonCore
import BatonStore
import Foundation
import Glibc

/// Orchestrates the measurements: seed, then `runs` rounds in which every configuration is
/// measured once, interleaved so that the disk's drift hits all of them alike; prints medians.
enum Bench {
    struct Options {
        var chains = 100_000
        var runs = 5
        var seconds = 2.0
        var directory = "/tmp"
        /// Only the measurements whose name contains this (e.g. "exchange").
        var only: String?
    }

    static func parse(_ arguments: [String]) -> Options? {
        var options = Options()
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { return nil }
            switch flag {
            case "--chains": options.chains = Int(value) ?? -1
            case "--runs": options.runs = Int(value) ?? -1
            case "--seconds": options.seconds = Double(value) ?? -1
            case "--dir": options.directory = value
            case "--only": options.only = value
            default: return nil
            }
        }
        return options.chains >= 20_000 && options.runs > 0 && options.seconds > 0 ? options : nil
    }

    static func main(_ arguments: [String]) -> Int32 {
        if arguments.first == "seed" { return seedOnly(Array(arguments.dropFirst())) }
        if arguments.first == "raw" { return rawOnly(Array(arguments.dropFirst())) }
        guard let options = parse(arguments) else {
            print("usage: baton-bench [--chains N>=20000] [--runs N] [--seconds S] [--dir DIR] [--only TEXT]")
            return 64
        }
        let path = "\(options.directory)/baton-bench-\(getpid()).db"
        defer { for suffix in ["", "-wal", "-shm", ".key"] { unlink(path + suffix) } }
        do {
            try run(options, path: path)
            return 0
        } catch {
            print("baton-bench: \(error)")
            return 1
        }
    }

    /// `baton-bench seed --db PATH --chains N --tokens FILE`: seeds a database for the server
    /// benchmark and writes "<chain id> <token>" lines for the load generator (a benchmark
    /// artefact in a scratch directory, never a production file).
    static func seedOnly(_ arguments: [String]) -> Int32 {
        var values: [String: String] = [:]
        var rest = arguments[...]
        while let flag = rest.popFirst(), let value = rest.popFirst() { values[flag] = value }
        guard let path = values["--db"], let tokensPath = values["--tokens"], let count = Int(values["--chains"] ?? "20000"), count > 0 else {
            print("usage: baton-bench seed --db PATH --chains N --tokens FILE")
            return 64
        }
        do {
            let key = try KeyFile.load(at: KeyFile.defaultPath(forDatabase: path), create: true)
            let tokens = try Seeder.seed(path: path, key: key, count: count)
            let codec = TokenCodec(key: key)
            let lines = tokens.map { "\(codec.authenticate($0)!.chainID) \($0)" }.joined(separator: "\n") + "\n"
            guard FileManager.default.createFile(atPath: tokensPath, contents: Data(lines.utf8), attributes: [.posixPermissions: 0o600]) else {
                print("baton-bench: cannot write \(tokensPath)")
                return 1
            }
            print("seeded \(count) chains into \(path)")
            return 0
        } catch {
            print("baton-bench: \(error)")
            return 1
        }
    }

    /// `baton-bench raw --db PATH --seconds S`: the raw-SQLite exchange baseline alone (64
    /// exchanges per FULL-synced commit) on a new scratch database, seeded with 10,000 chains;
    /// prints `raw exchanges/s: N` for the server benchmark.
    static func rawOnly(_ arguments: [String]) -> Int32 {
        var values: [String: String] = [:]
        var rest = arguments[...]
        while let flag = rest.popFirst(), let value = rest.popFirst() { values[flag] = value }
        guard let path = values["--db"], let seconds = Double(values["--seconds"] ?? "10"), seconds > 0 else {
            print("usage: baton-bench raw --db PATH --seconds S")
            return 64
        }
        do {
            guard access(path, F_OK) != 0 else {
                print("baton-bench: \(path) exists; the raw baseline seeds a new scratch file")
                return 1
            }
            let key = try KeyFile.load(at: KeyFile.defaultPath(forDatabase: path), create: true)
            let codec = TokenCodec(key: key)
            let chains = try Seeder.seed(path: path, key: key, count: 10_000).map { codec.authenticate($0)!.chainID.rawValue }
            let raw = RawBaseline(path: path, chains: chains)
            let rate = 64 * LoadRunner.throughput(threads: 1, seconds: seconds) { _ in raw.exchangeBatch(64) }
            print("raw exchanges/s: \(Int(rate.rounded()))")
            return 0
        } catch {
            print("baton-bench: \(error)")
            return 1
        }
    }

    /// One named measurement, taken once per round.
    struct Configuration {
        var name: String
        var measure: () -> Double
    }

    static func run(_ options: Options, path: String) throws {
        let key = try KeyFile.load(at: KeyFile.defaultPath(forDatabase: path), create: true)
        let seedStart = LoadRunner.now()
        let tokens = try Seeder.seed(path: path, key: key, count: options.chains)
        print("seeded \(options.chains) chains in \(String(format: "%.1f", LoadRunner.now() - seedStart)) s")

        // The last 10,000 chains belong to the raw baselines; the engine never touches them.
        let codec = TokenCodec(key: key)
        let rawChains = tokens.suffix(10_000).map { codec.authenticate($0)!.chainID.rawValue }
        var heads = Array(tokens.dropLast(10_000))
        var policy = Policy()
        policy.maxChainsPerUser = 0
        let store = try TokenStore(path: path, key: key, policy: policy)
        defer { store.close() }
        let lanes = Lanes(heads)
        heads = []

        func exchange(callers: Int) -> Double {
            // Caller i owns chains i, i+callers, i+2*callers, ...: no two callers share a chain,
            // so each slot is touched by one thread only and needs no lock.
            let cursors = Lanes([Int](repeating: 0, count: callers))
            return LoadRunner.throughput(threads: callers, seconds: options.seconds) { caller in
                let slot = caller + (cursors[caller] % (lanes.count / callers)) * callers
                cursors[caller] += 1
                do { lanes[slot] = try store.exchange(lanes[slot]).token } catch { fatalError("exchange failed in benchmark: \(error)") }
            }
        }

        func verify(callers: Int) -> Double {
            let cursors = Lanes((0..<callers).map { $0 * 7919 })
            return LoadRunner.throughput(threads: callers, seconds: options.seconds) { caller in
                cursors[caller] = (cursors[caller] &+ 104_729) % lanes.count
                do { _ = try store.verify(lanes[cursors[caller]]) } catch { fatalError("verify failed in benchmark: \(error)") }
            }
        }

        let raw = RawBaseline(path: path, chains: rawChains)
        let lookups = (0..<2).map { RawLookup(path: path, chains: rawChains, seed: $0 * 977) }
        let configurations = [
            Configuration(name: "raw exchange, 1 per commit") { LoadRunner.throughput(threads: 1, seconds: options.seconds) { _ in raw.exchangeBatch(1) } },
            Configuration(name: "raw exchange, 64 per commit") { 64 * LoadRunner.throughput(threads: 1, seconds: options.seconds) { _ in raw.exchangeBatch(64) } },
            Configuration(name: "store exchange, 1 caller") { exchange(callers: 1) },
            Configuration(name: "store exchange, 8 callers") { exchange(callers: 8) },
            Configuration(name: "store exchange, 64 callers") { exchange(callers: 64) },
            Configuration(name: "raw lookup, 1 thread") { LoadRunner.throughput(threads: 1, seconds: options.seconds) { _ in lookups[0].lookup() } },
            Configuration(name: "raw lookup, 2 threads") { LoadRunner.throughput(threads: 2, seconds: options.seconds) { lookups[$0].lookup() } },
            Configuration(name: "store verify, 1 caller") { verify(callers: 1) },
            Configuration(name: "store verify, 2 callers") { verify(callers: 2) },
            Configuration(name: "store verify, 8 callers") { verify(callers: 8) },
            Configuration(name: "store verify, 64 callers") { verify(callers: 64) },
        ].filter { options.only == nil || $0.name.contains(options.only!) }
        var samples = [[Double]](repeating: [], count: configurations.count)
        for round in 1...options.runs {
            for (index, configuration) in configurations.enumerated() {
                samples[index].append(configuration.measure())
            }
            print("round \(round)/\(options.runs) done")
        }
        report(configurations.map(\.name), samples, store: store)
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    static func report(_ names: [String], _ samples: [[Double]], store: TokenStore) {
        let medians = samples.map(median)
        print("\n| measurement | median ops/s | runs |")
        print("|---|---:|---|")
        for (index, name) in names.enumerated() {
            let runs = samples[index].map { String(Int($0.rounded())) }.joined(separator: ", ")
            print("| \(name) | \(Int(medians[index].rounded())) | \(runs) |")
        }
        func ratio(_ a: String, _ b: String) -> String {
            guard let i = names.firstIndex(of: a), let j = names.firstIndex(of: b) else { return "n/a" }
            let x = medians[i], y = medians[j]
            return String(format: "%.0f%%", 100 * x / y)
        }
        // Per-round ratios too: each round's two figures were taken minutes apart at most.
        func roundRatios(_ a: String, _ b: String) -> String {
            guard let i = names.firstIndex(of: a), let j = names.firstIndex(of: b) else { return "n/a" }
            let x = samples[i], y = samples[j]
            return zip(x, y).map { String(format: "%.0f%%", 100 * $0 / $1) }.joined(separator: ", ")
        }
        print("\nstore exchange @64 / raw 64-per-commit: \(ratio("store exchange, 64 callers", "raw exchange, 64 per commit")) (per round: \(roundRatios("store exchange, 64 callers", "raw exchange, 64 per commit")))")
        print("store verify @2 / raw lookup @2: \(ratio("store verify, 2 callers", "raw lookup, 2 threads")) (per round: \(roundRatios("store verify, 2 callers", "raw lookup, 2 threads")))")
        let stats = store.commitStatistics
        print("group commit: \(stats.writes) writes in \(stats.batches) transactions (mean \(String(format: "%.1f", Double(stats.writes) / Double(max(stats.batches, 1)))), largest \(stats.largestBatch))")
    }
}

/// Per-thread slots shared without a lock: the benchmark gives each thread its own indices.
final class Lanes<Element>: @unchecked Sendable {
    private let storage: UnsafeMutableBufferPointer<Element>
    init(_ values: [Element]) {
        storage = .allocate(capacity: values.count)
        _ = storage.initialize(from: values)
    }
    deinit {
        storage.deinitialize()
        storage.deallocate()
    }
    var count: Int { storage.count }
    subscript(index: Int) -> Element {
        get { storage[index] }
        set { storage[index] = newValue }
    }
}
