import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `baton-sim`'s command line.
///
///     baton-sim --seed N                  replay one seed: its log if it fails; the digest last
///     baton-sim --seeds N [--base-seed B] run N seeds from B (random when not given, printed)
///     baton-sim --hours H                 run seeds for H hours (a developer's machine)
///     baton-sim --regressions FILE        run every seed listed in FILE (one per line, # comments)
///     baton-sim --mutant NAME --seeds N   turn a known defect back on: report the first seed that finds it
///     baton-sim --calm --seeds N          no faults: checks exchanges per token lifetime
///     --log (with --seed) prints a passing seed's event log; --digests prints each seed's digest;
///     --minutes M simulates M minutes per seed (30; a seed's schedule depends on it)
///
/// Exit 0 when every seed held every invariant (or, with --mutant, when one failed: found);
/// 1 otherwise; 64 on a usage error.
package enum SimCommand {
    package static func main(_ arguments: [String]) -> Never {
        ensureDeterministicHashing(arguments)
        do {
            let options = try Options(Array(arguments.dropFirst()))
            exit(run(options))
        } catch {
            FileHandle.standardError.write(Data("Error: \(error)\nUsage: baton-sim --seed N | --seeds N [--base-seed B] | --hours H | --regressions FILE [--mutant NAME] [--calm]\n".utf8))
            exit(64)
        }
    }

    struct Options {
        var seed: UInt64?
        var seeds: Int?
        var baseSeed: UInt64?
        var hours: Double?
        var regressions: String?
        var mutants: [String] = []
        var calm = false
        var printsLog = false
        var printsDigests = false
        /// Simulated minutes per seed (30 by default; a seed's schedule depends on it).
        var minutes = 30
        var directory = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()

        init(_ arguments: [String]) throws {
            var rest = arguments[...]
            func value(_ flag: String) throws -> String {
                guard let next = rest.popFirst() else { throw UsageError("\(flag) needs a value") }
                return next
            }
            func number<T: FixedWidthInteger>(_ flag: String, _ type: T.Type) throws -> T {
                let text = try value(flag)
                guard let number = T(text) else { throw UsageError("\(flag) must be a whole number, not '\(text)'") }
                return number
            }
            while let flag = rest.popFirst() {
                switch flag {
                case "--seed": seed = try number(flag, UInt64.self)
                case "--seeds": seeds = try number(flag, Int.self)
                case "--base-seed": baseSeed = try number(flag, UInt64.self)
                case "--hours":
                    let text = try value(flag)
                    guard let hours = Double(text), hours > 0 else { throw UsageError("--hours must be a positive number, not '\(text)'") }
                    self.hours = hours
                case "--regressions": regressions = try value(flag)
                case "--mutant": mutants.append(try value(flag))
                case "--calm": calm = true
                case "--log": printsLog = true
                case "--digests": printsDigests = true
                case "--minutes":
                    minutes = try number(flag, Int.self)
                    guard (2...1440).contains(minutes) else { throw UsageError("--minutes must be from 2 to 1440, not \(minutes)") }
                case "--directory": directory = try value(flag)
                default: throw UsageError("unknown argument '\(flag)'")
                }
            }
            if seed == nil && seeds == nil && hours == nil && regressions == nil { throw UsageError("say which seeds to run") }
        }
    }

    struct UsageError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func run(_ options: Options) -> Int32 {
        do { try Simulation.activate(mutants: options.mutants) } catch {
            FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
            return 64
        }
        let hunting = !options.mutants.isEmpty
        if let seed = options.seed {
            let result = Simulation.run(seed: seed, directory: options.directory, keepsLog: true, calm: options.calm, length: .seconds(options.minutes * 60))
            if result.failed { report(result, minutes: options.minutes) } else {
                print("seed \(seed): ok (\(result.mix))")
                if options.printsLog { for line in result.log { print("  | \(line)") } }
            }
            print("digest \(result.digest)")
            return result.failed == hunting ? 0 : 1
        }
        var seeds: [UInt64] = []
        if let file = options.regressions {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                FileHandle.standardError.write(Data("Error: cannot read the regression list \(file)\n".utf8))
                return 1
            }
            do {
                seeds = try regressionSeeds(in: text)
            } catch {
                FileHandle.standardError.write(Data("Error: \(file): \(error.description)\n".utf8))
                return 1
            }
            print("baton-sim: \(seeds.count) regression seeds from \(file)")
        }
        let base = options.baseSeed ?? UInt64.random(in: 1...(UInt64(1) << 48))
        if let count = options.seeds {
            print("baton-sim: \(count) seeds from base seed \(base)\(hunting ? ", mutants \(options.mutants.joined(separator: ","))" : "")\(options.calm ? ", calm" : "")")
            seeds += (0..<UInt64(count)).map { base &+ $0 }
        }
        let deadline = options.hours.map { Date().addingTimeInterval($0 * 3600) }
        var ran = 0, failed = 0, lifetimes = 0.0
        let started = Date()
        var next = base &+ UInt64(options.seeds ?? 0)
        var index = 0
        while true {
            let seed: UInt64
            if index < seeds.count {
                seed = seeds[index]
                index += 1
            } else if let deadline, Date() < deadline {
                seed = next
                next &+= 1
            } else {
                break
            }
            let result = Simulation.run(seed: seed, directory: options.directory, calm: options.calm, length: .seconds(options.minutes * 60))
            ran += 1
            lifetimes += result.lifetimes
            if options.printsDigests { print("seed \(seed) digest \(result.digest)") }
            if result.failed {
                failed += 1
                if hunting {
                    print("baton-sim: mutant found by seed \(seed), the \(ran)\(ordinal(ran)) seed run")
                    report(Simulation.run(seed: seed, directory: options.directory, keepsLog: true, calm: options.calm, length: .seconds(options.minutes * 60)), minutes: options.minutes)
                    return 0
                }
                report(Simulation.run(seed: seed, directory: options.directory, keepsLog: true, calm: options.calm, length: .seconds(options.minutes * 60)), minutes: options.minutes)
            }
        }
        let seconds = Date().timeIntervalSince(started)
        print(String(format: "baton-sim: %d seeds, %d failed, %.0f simulated token lifetimes in %.1f s (%.0f lifetimes per second)",
                     ran, failed, lifetimes, seconds, lifetimes / max(seconds, 0.001)))
        if hunting {
            print("baton-sim: the mutant was not found in \(ran) seeds")
            return 1
        }
        return failed == 0 ? 0 : 1
    }

    /// The seeds of a regression list: one per line, first on its line, with an optional
    /// `# comment` after it. Blank lines and lines starting with `#` are skipped whole (a
    /// commented-out seed stays out); any other line that does not start with a seed is an error.
    static func regressionSeeds(in text: String) throws(UsageError) -> [UInt64] {
        var seeds: [UInt64] = []
        for (index, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let first = trimmed.prefix { !$0.isWhitespace && $0 != "#" }
            guard let seed = UInt64(first) else {
                throw UsageError("line \(index + 1) does not start with a seed (a number) or #: '\(trimmed.prefix(60))'")
            }
            seeds.append(seed)
        }
        return seeds
    }

    static func ordinal(_ n: Int) -> String {
        switch (n % 10, n % 100) {
        case (1, let t) where t != 11: "st"
        case (2, let t) where t != 12: "nd"
        case (3, let t) where t != 13: "rd"
        default: "th"
        }
    }

    /// Prints a failing seed: its violations, then the schedule that ran.
    static func report(_ result: Simulation.Result, minutes: Int = 30) {
        print("baton-sim: seed \(result.seed) FAILED (\(result.mix))")
        for violation in result.violations { print("  violation: \(violation)") }
        print("  replay: baton-sim --seed \(result.seed)\(minutes == 30 ? "" : " --minutes \(minutes)")")
        for line in result.log { print("  | \(line)") }
    }

    /// Dictionaries' order depends on a per-process hash seed unless
    /// `SWIFT_DETERMINISTIC_HASHING` is set before the runtime starts: the command runs itself
    /// again with it set (once).
    static func ensureDeterministicHashing(_ arguments: [String]) {
        guard getenv("SWIFT_DETERMINISTIC_HASHING") == nil else { return }
        setenv("SWIFT_DETERMINISTIC_HASHING", "1", 1)
        let path = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        execv(path, &argv)
        FileHandle.standardError.write(Data("Error: cannot run \(path) again with SWIFT_DETERMINISTIC_HASHING=1\n".utf8))
        exit(1)
    }
}
