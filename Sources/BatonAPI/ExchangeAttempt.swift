import BatonCore

/// The `X-Baton-Exchange-Attempt` request header of `/v1/exchange` (R3b): the number of this
/// attempt of one token's exchange, 1 for the first, higher for each retry the client sends.
/// A pure parser, so that every malformed value is a table test.
enum ExchangeAttempt {
    /// The header's name, as clients send it.
    static let headerName = "X-Baton-Exchange-Attempt"
    /// The highest number accepted (a 32-bit signed integer: every store and client holds it).
    static let maximum = 2_147_483_647

    /// The attempt number in `values` (every field of that name the request carries), nil when
    /// the header is absent.
    /// - Throws: `invalidArgument` naming the header for two fields or more, and for anything but
    ///   a decimal number from 1 to `maximum` without sign, leading zero or spaces (a list, `+1`,
    ///   `01`, `1.0`, ...).
    static func parse(_ values: [String]) throws(BatonError) -> Int? {
        guard let value = values.first else { return nil }
        guard values.count == 1 else { throw .invalidArgument("Send \(headerName) once.") }
        let digits = value.utf8
        guard (1...10).contains(digits.count), digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              digits.first != UInt8(ascii: "0"), let number = Int(value), number <= maximum else {
            throw .invalidArgument("\(headerName) must be a whole number from 1 to \(maximum) (the number of this exchange attempt).")
        }
        return number
    }
}
