/// What one simulated device (or a sum of them) came to.
struct Tally: Sendable {
    var devices = 0
    /// Token lifetimes lived: generations advanced by exchanges.
    var lifetimes = 0
    /// Exchange requests the client sent (relay copies not counted).
    var exchangeRequests = 0
    /// Of those, the ones that carried a token sent to exchange before (retries, takeovers).
    var repeatedExchanges = 0
    var faults = 0
    /// Logouts of chains nobody stole.
    var forcedLogouts = 0
    var thefts = 0
    var theftsDetected = 0
    /// Device processes that crashed or exited unasked (must be 0).
    var crashes = 0
    /// How they ended ("exit 66", "signal 11").
    var crashKinds: [String: Int] = [:]
    /// Requests that failed to the app, by why.
    var failures: [String: Int] = [:]
    /// Why chains ended (stolen or not), as the device was told.
    var logoutReasons: [String: Int] = [:]
    /// How the thefts the server missed ended, by the thief's account.
    var missedThefts: [String: Int] = [:]
    /// Logins that failed and were tried again (the start's burst, offline), by why.
    var loginFailures: [String: Int] = [:]

    var failureCount: Int { failures.values.reduce(0, +) }

    static func + (left: Tally, right: Tally) -> Tally {
        var sum = left
        sum.devices += right.devices
        sum.lifetimes += right.lifetimes
        sum.exchangeRequests += right.exchangeRequests
        sum.repeatedExchanges += right.repeatedExchanges
        sum.faults += right.faults
        sum.forcedLogouts += right.forcedLogouts
        sum.thefts += right.thefts
        sum.theftsDetected += right.theftsDetected
        sum.crashes += right.crashes
        sum.crashKinds.merge(right.crashKinds, uniquingKeysWith: +)
        sum.failures.merge(right.failures, uniquingKeysWith: +)
        sum.logoutReasons.merge(right.logoutReasons, uniquingKeysWith: +)
        sum.loginFailures.merge(right.loginFailures, uniquingKeysWith: +)
        sum.missedThefts.merge(right.missedThefts, uniquingKeysWith: +)
        return sum
    }

    /// Exchange requests per token lifetime, as text.
    var exchangesPerLifetime: String {
        lifetimes == 0 ? "-" : String(format3(Double(exchangeRequests) / Double(lifetimes)))
    }

    /// The most frequent entries of `counts` (reasons), as "why ×n, ...".
    static func top(_ counts: [String: Int], _ count: Int) -> String {
        let sorted = counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        return sorted.prefix(count).map { "\($0.key) ×\($0.value)" }.joined(separator: ", ")
    }
}

/// `value` with three decimals.
func format3(_ value: Double) -> String {
    let scaled = Int((value * 1000).rounded())
    let fraction = String(scaled % 1000)
    return "\(scaled / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
}
