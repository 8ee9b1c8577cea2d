import Foundation

/// The benchmark's command line, parsed by a pure function.
struct BenchOptions: Equatable, Sendable {
    /// Token lifetimes to live in all, spread evenly over the devices.
    var lifetimes = 20_000
    var devices = 100
    var seed: UInt64 = 1
    /// The server's token lifetime, in seconds.
    var tokenLifetime: TimeInterval = 2
    /// A hard limit on the run; devices still short of their budget are stopped and reported.
    var maxSeconds: TimeInterval = 1800
    /// Multiplies every fault rate (at most 100%): a short run sees more faults.
    var faultScale: Double = 1
    /// Only these kinds (all by default).
    var kinds = FaultKind.allCases
    /// Whether the devices bind their chains to a device key (DPoP; the client's default) or
    /// log in unbound (`--binding unbound`: Bearer tokens, as before binding existed).
    var bound = true

    static let usage = """
        Usage: baton-fault-bench [--lifetimes N] [--devices N] [--seed N] [--token-ttl SECONDS]
                                 [--max-seconds N] [--fault-scale X] [--kinds kind,kind,...] [--binding bound|unbound]
          --lifetimes N      token lifetimes in all, over every device (default 20000)
          --devices N        simulated devices, each its own process(es) and relay port (default 100)
          --seed N           seeds every random choice (default 1)
          --token-ttl S      the server's token lifetime in seconds (default 2)
          --max-seconds N    stop the run after N seconds, reporting what was done (default 1800)
          --fault-scale X    multiply every fault rate by X, at most 100% (default 1)
          --kinds LIST       only these fault kinds, comma-separated (default: all)
          --binding B        bound: devices bind their chains to a device key (DPoP, default);
                             unbound: Bearer tokens. Bound, the answer-lost rows must be 0 too
        Kinds: \(FaultKind.allCases.map(\.rawValue).joined(separator: ", "))
        """

    enum ParseError: Error, Equatable, CustomStringConvertible {
        case unknownOption(String)
        case badValue(option: String, value: String)
        case missingValue(String)
        var description: String {
            switch self {
            case .unknownOption(let option): "unknown option '\(option)'"
            case .badValue(let option, let value): "bad value '\(value)' for \(option)"
            case .missingValue(let option): "\(option) needs a value"
            }
        }
    }

    /// The options in `arguments` (without the program name).
    static func parse(_ arguments: [String]) throws(ParseError) -> BenchOptions {
        var options = BenchOptions()
        var rest = arguments[...]
        while let option = rest.popFirst() {
            guard let value = rest.popFirst() else {
                throw option.hasPrefix("--") ? .missingValue(option) : .unknownOption(option)
            }
            switch option {
            case "--lifetimes": options.lifetimes = try positive(option, value)
            case "--devices": options.devices = try positive(option, value)
            case "--seed": guard let seed = UInt64(value) else { throw .badValue(option: option, value: value) }; options.seed = seed
            case "--token-ttl":
                guard let seconds = TimeInterval(value), seconds >= 0.5, seconds <= 3600 else { throw .badValue(option: option, value: value) }
                options.tokenLifetime = seconds
            case "--fault-scale":
                guard let scale = Double(value), scale > 0, scale <= 100 else { throw .badValue(option: option, value: value) }
                options.faultScale = scale
            case "--max-seconds": options.maxSeconds = TimeInterval(try positive(option, value))
            case "--binding":
                guard value == "bound" || value == "unbound" else { throw .badValue(option: option, value: value) }
                options.bound = value == "bound"
            case "--kinds":
                var kinds: [FaultKind] = []
                for name in value.split(separator: ",") {
                    guard let kind = FaultKind(rawValue: String(name)) else { throw .badValue(option: option, value: String(name)) }
                    kinds.append(kind)
                }
                guard !kinds.isEmpty else { throw .badValue(option: option, value: value) }
                options.kinds = kinds
            default: throw .unknownOption(option)
            }
        }
        return options
    }

    private static func positive(_ option: String, _ value: String) throws(ParseError) -> Int {
        guard let number = Int(value), number > 0 else { throw .badValue(option: option, value: value) }
        return number
    }
}
