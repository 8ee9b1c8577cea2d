@_spi(Simulation) import BatonClient
import BatonCore
import Foundation

/// Runs seeds: one world per seed, inside the deterministic executor, so that a seed is one
/// schedule of the shipped client and server code, replayable exactly.
package enum Simulation {
    /// What one seed's run found.
    package struct Result: Sendable {
        package var seed: UInt64
        package var mix: String
        package var digest: String
        package var violations: [String]
        package var log: [String]
        package var outcome: String
        /// Simulated token lifetimes the run covered (logged-in time / the token TTL).
        package var lifetimes: Double
        package var failed: Bool { !violations.isEmpty }
    }

    /// Runs `seed`; `keepsLog` keeps the event log's lines (for a failing seed's report).
    package static func run(seed: UInt64, directory: String, keepsLog: Bool = false, calm: Bool = false,
                            length: Duration = .seconds(1800)) -> Result {
        var options = SimOptions(directory: directory)
        options.keepsLog = keepsLog
        options.length = length
        if calm { options.mix = .calm }
        let world = SimWorld(seed: seed, options: options)
        var executorOptions = DeterministicExecutor.Options()
        executorOptions.maxSteps = 20_000_000
        let report = DeterministicExecutor.run(seed: seed, options: executorOptions) {
            await world.run()
        }
        var violations = world.violations
        if report.outcome != .completed { violations.append("the run did not complete: \(report.outcome.rawValue) (\(report))") }
        let logged = world.observed.firstLoginAt.map { Double(report.simulatedTime.components.seconds) - Double($0.nanoseconds) / 1e9 } ?? 0
        let result = Result(seed: seed, mix: world.mix.description, digest: world.digest, violations: violations, log: world.eventLog,
                            outcome: report.outcome.rawValue,
                            lifetimes: max(0, logged) / Double(SimServer.policy.tokenTTL.components.seconds))
        world.releaseAfterRun()
        return result
    }

    /// Turns the named mutants on (client and server), or throws naming the unknown one.
    package static func activate(mutants names: [String]) throws {
        for name in names {
            if let mutant = SimulationMutant(rawValue: name) {
                SimulationMutant.active.insert(mutant)
            } else if let mutant = RuleMutant(rawValue: name) {
                RuleMutant.active.insert(mutant)
            } else {
                throw SimulationError.unknownMutant(name)
            }
        }
    }

    /// Every mutant's name.
    package static var mutantNames: [String] { SimulationMutant.allCases.map(\.rawValue) + RuleMutant.allCases.map(\.rawValue) }
}

/// A simulation set up wrong.
package enum SimulationError: Error, CustomStringConvertible {
    case unknownMutant(String)
    package var description: String {
        switch self {
        case .unknownMutant(let name): "no mutant named '\(name)' (known: \(Simulation.mutantNames.joined(separator: ", ")))"
        }
    }
}
