/// A parsed JSON value (RFC 8259) of a proof's header or claims. Numbers are kept as
/// `Double`: the only number a proof's check reads is `iat`, seconds since the epoch, exact
/// in a double far beyond any plausible date.
package enum JSONNode: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONNode])
    case object([String: JSONNode])

    /// The string, or nil for any other kind of value.
    package var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The members, or nil for any other kind of value.
    package var object: [String: JSONNode]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The number, or nil for any other kind of value (a boolean is not a number).
    package var number: Double? {
        if case .number(let value) = self { return value }
        return nil
    }
}
