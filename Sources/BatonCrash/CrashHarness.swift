import Glibc

/// A campaign: for each seed a workload through the recording VFS, then crash states built
/// from its log (half just after an acknowledgement, half anywhere after the first one),
/// each reopened and checked (`CrashCheck`).
package enum CrashHarness {
    /// One seed's outcome.
    package struct SeedResult: Sendable {
        package var seed: UInt64
        package var states = 0
        /// The first failing state: its crash point and problems.
        package var failure: (crashPoint: Int, problems: [String])?
        /// How many states were checked when the first failure was found.
        package var statesToFailure: Int?
        /// The log's size: operations, writes, syncs, and the files it touched.
        package var summary = ""
    }

    /// Runs one seed in a new directory under `scratch` (removed after).
    package static func run(seed: UInt64, steps: Int, states: Int, mutant: CrashWorkload.Mutant?, scratch: String,
                             keepFailing: String? = nil) throws -> SeedResult {
        let directory = scratch + "/seed-\(seed)"
        guard mkdir(directory, 0o700) == 0 else { throw CrashFailure("cannot make \(directory): \(String(cString: strerror(errno)))") }
        defer { removeTree(directory) }
        let workload = try CrashWorkload(directory: directory + "/run", seed: seed, stepCount: steps, mutant: mutant, make: true)
        var random = CrashRandom(seed: seed ^ 0x5EED_C0DE)
        let marks = workload.log.operations.indices.filter { if case .mark = workload.log.operations[$0] { return true } else { return false } }
        guard let first = marks.first else { throw CrashFailure("seed \(seed): no acknowledgement in the log") }
        var result = SeedResult(seed: seed)
        let ops = workload.log.operations
        let writes = ops.filter { if case .write = $0 { return true } else { return false } }.count
        let syncs = ops.filter { if case .sync = $0 { return true } else { return false } }.count
        result.summary = "\(ops.count) operations (\(writes) writes, \(syncs) syncs, \(marks.count) acknowledgements) on \(workload.log.files.sorted().joined(separator: ", "))"
        for index in 0..<states {
            let crashPoint = index % 2 == 0
                ? marks[Int.random(in: 0..<marks.count, using: &random)] + 1
                : Int.random(in: (first + 1)...workload.log.operations.count, using: &random)
            let files = CrashState.build(log: workload.log, durableBefore: workload.baseline, crashPoint: crashPoint, random: &random)
            let stateDirectory = directory + "/state-\(index)"
            guard mkdir(stateDirectory, 0o700) == 0 else { throw CrashFailure("cannot make \(stateDirectory)") }
            let problems = try CrashCheck.problems(workload: workload, crashPoint: crashPoint, files: files,
                                                   directory: stateDirectory, mutant: mutant)
            result.states += 1
            if !problems.isEmpty, result.failure == nil {
                result.failure = (crashPoint, problems)
                result.statesToFailure = result.states
                if let keepFailing { _ = rename(stateDirectory, keepFailing + "/crash-state-seed-\(seed)-point-\(crashPoint)") }
                if mutant != nil { break }  // a mutant needs one finding
            }
            removeTree(stateDirectory)
        }
        return result
    }

    /// Removes a directory tree of plain files (what the harness makes), ignoring errors.
    static func removeTree(_ path: String) {
        if let names = try? CrashWorkload.names(in: path) {
            for name in names {
                let child = path + "/" + name
                var info = stat()
                if lstat(child, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { removeTree(child) } else { unlink(child) }
            }
        }
        rmdir(path)
    }
}
