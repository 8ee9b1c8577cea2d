// baton-crash: power cuts, every crash state of the disk the seed picks (docs/reliability.md,
// "Power cuts"). Each seed runs real operations on Baton's SQLite store through a recording
// VFS, builds the disks a power cut could leave after its acknowledgements, reopens each with
// Baton's own code and checks that nothing acknowledged was lost.
//
//   baton-crash --seeds N [--base-seed S] [--states K] [--steps M]   N seeds from S
//   baton-crash --seed S [--states K] [--keep DIR]                   one seed (a failing state kept in DIR)
//   baton-crash --regressions FILE                                   the seeds listed in FILE
//   baton-crash --mutant synchronous-normal --seed S                 exits 0 when the mutant's loss is found
//
// The last line: `baton-crash: N seeds, M crash states, F failed`.
import BatonCrash
import Glibc

enum CrashMain {
    static func fail(_ message: String) -> Never {
        let bytes = Array("baton-crash: \(message)\n".utf8)
        _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        exit(64)
    }

    static func number<T: LosslessStringConvertible>(_ text: String, for flag: String) -> T {
        guard let value = T(text) else { fail("\(flag) needs a whole number, not '\(text)'") }
        return value
    }

    static func main(_ arguments: [String]) -> Int32 {
        var seeds: [UInt64] = []
        var count: Int?
        var base: UInt64 = 1
        var states = 10
        var steps = 30
        var mutant: CrashWorkload.Mutant?
        var keep: String?
        var verbose = false
        var index = 1
        func value() -> String {
            index += 1
            guard index < arguments.count else { fail("\(arguments[index - 1]) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            let flag = arguments[index]
            switch flag {
            case "--seeds": count = number(value(), for: flag) as Int
            case "--base-seed": base = number(value(), for: flag)
            case "--seed": seeds.append(number(value(), for: flag))
            case "--states": states = number(value(), for: flag)
            case "--steps": steps = number(value(), for: flag)
            case "--keep": keep = value()
            case "--verbose": verbose = true
            case "--mutant":
                let name = value()
                guard let known = CrashWorkload.Mutant(rawValue: name) else {
                    fail("unknown mutant '\(name)' (known: \(CrashWorkload.Mutant.allCases.map(\.rawValue).joined(separator: ", ")))")
                }
                mutant = known
            case "--regressions":
                let path = value()
                guard let file = fopen(path, "r") else { fail("cannot read \(path)") }
                var line: UnsafeMutablePointer<CChar>?
                var capacity = 0
                while getline(&line, &capacity, file) > 0 {
                    let text = String((String(cString: line!).split(separator: "#", omittingEmptySubsequences: false).first ?? "")
                        .filter { !$0.isWhitespace })
                    if let seed = UInt64(text) { seeds.append(seed) } else if !text.isEmpty { fail("\(path): '\(text)' is not a seed") }
                }
                free(line)
                fclose(file)
            default: fail("unknown argument '\(flag)'")
            }
            index += 1
        }
        if let count { seeds += (0..<UInt64(max(0, count))).map { base &+ $0 } }
        guard !seeds.isEmpty else { fail("give --seeds N, --seed S or --regressions FILE") }
        guard CrashRecorder.install() else { fail("SQLite has no unix VFS to record") }
        let scratchTemplate = (String(cString: getenv("TMPDIR") ?? strdup("/tmp")!)) + "/baton-crash.XXXXXX"
        var template = Array(scratchTemplate.utf8CString)
        guard let made = mkdtemp(&template) else { fail("cannot make a scratch directory under TMPDIR") }
        let scratch = String(cString: made)
        defer { rmdir(scratch) }

        var checked = 0
        var failed = 0
        for seed in seeds {
            do {
                let result = try CrashHarness.run(seed: seed, steps: steps, states: states, mutant: mutant, scratch: scratch, keepFailing: keep)
                checked += result.states
                if verbose { print("baton-crash: seed \(seed): \(result.summary); \(result.states) crash states") }
                if let failure = result.failure {
                    if mutant != nil {
                        print("baton-crash: mutant \(mutant!.rawValue) found by seed \(seed) after \(result.statesToFailure!) crash states: "
                              + failure.problems[0])
                        continue
                    }
                    failed += 1
                    print("baton-crash: seed \(seed) FAILED at crash point \(failure.crashPoint) (replay: baton-crash --seed \(seed) --states \(states) --steps \(steps)):")
                    for problem in failure.problems.prefix(10) { print("  \(problem)") }
                } else if mutant != nil {
                    failed += 1
                    print("baton-crash: mutant \(mutant!.rawValue) NOT found by seed \(seed) in \(result.states) crash states")
                }
            } catch {
                failed += 1
                print("baton-crash: seed \(seed): \(error)")
            }
        }
        print("baton-crash: \(seeds.count) seeds, \(checked) crash states, \(failed) failed")
        return failed == 0 ? 0 : 1
    }
}

exit(CrashMain.main(CommandLine.arguments))
