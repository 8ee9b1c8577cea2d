import BatonCore

/// The query of `GET /v1/verify`: only `max_age` (RFC 9470), a non-negative decimal number
/// of seconds. Pure: the request-target in, the duration or a 400 naming the problem out.
enum VerifyQuery {
    /// The largest `max_age` accepted (2^31 − 1 seconds, about 68 years).
    static let maximumSeconds: Int64 = 2_147_483_647

    /// The `max_age` in `target`'s query; nil when there is no query or an empty one.
    ///
    /// Strict, because a resource server states a security requirement here: `max_age` is
    /// 1-10 ASCII digits (no sign, spaces or percent-encoding) up to `maximumSeconds`, given
    /// once. Any other parameter is refused rather than ignored: silently dropping, say, an
    /// `acr_values` the caller expects enforced would fail open.
    /// - Throws: `.invalidArgument` (400 invalid_request) naming `max_age` or the parameter.
    static func maxAge(in target: String) throws(BatonError) -> Duration? {
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return nil }  // bytes, not Characters: cheaper
        let query = target.utf8[target.utf8.index(after: mark)...]
        guard !query.isEmpty else { return nil }
        var seconds: Int64?
        for pair in query.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(decoding: parts[0], as: UTF8.self)
            guard name == "max_age" else {
                guard !name.isEmpty else { throw .invalidArgument("The query is malformed; the only parameter is max_age=SECONDS.") }
                let shown = name.count > 32 ? name.prefix(32) + "…" : Substring(name)
                throw .invalidArgument("Unknown query parameter '\(shown)'; the only parameter is max_age=SECONDS.")
            }
            guard seconds == nil else { throw .invalidArgument("max_age is given more than once.") }
            guard parts.count == 2, let value = decimal(parts[1]) else {
                throw .invalidArgument("max_age must be a whole number of seconds from 0 to \(maximumSeconds), digits only.")
            }
            seconds = value
        }
        return seconds.map { .seconds($0) }
    }

    /// 1-10 ASCII digits up to `maximumSeconds`, else nil.
    private static func decimal(_ digits: Substring.UTF8View) -> Int64? {
        guard (1...10).contains(digits.count) else { return nil }
        var value: Int64 = 0
        for byte in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        return value <= maximumSeconds ? value : nil
    }
}
