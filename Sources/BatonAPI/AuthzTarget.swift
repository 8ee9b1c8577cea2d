import BatonCore

/// The original request of an Envoy external-authorization check in HTTP mode: Envoy sends
/// the client's method unchanged and `path_prefix` followed by the client's path and query
/// (envoy.extensions.filters.http.ext_authz.v3.HttpService). Pure: the request-target in,
/// the original request-target or a 400 naming the problem out.
enum AuthzTarget {
    /// The `path_prefix` deploy/envoy/envoy.yaml configures.
    static let prefix = "/v1/authz"

    /// What follows `prefix` in `target`: the original path and query.
    ///
    /// Reject, don't repair, exactly as the shipped gateways do before any route is chosen: a
    /// path (the query may hold anything) with a dot segment (`/./`, `/../`, also at the end),
    /// an encoded dot, slash, backslash, NUL, percent sign or semicolon (`%2e`, `%2f`, `%5c`,
    /// `%00`, `%25`, `%3b`, any case), a backslash, a `;` (a path parameter: servlet containers
    /// drop `;x` from every segment, so `/api/;x/transfer` is their `/api/transfer`; issue 43,
    /// finding 2), an empty segment (`//`), or a byte outside printable ASCII. The app behind the gateway then never gets a path whose normalized
    /// form differs from the one the step-up rules matched, and nothing can climb out of the
    /// prefix (`/v1/authz/../login` is such a path: refused here, never routed elsewhere).
    /// - Throws: `.invalidArgument` (400 invalid_request).
    static func original(of target: String) throws(BatonError) -> String {
        let bytes = Array(target.utf8)
        guard bytes.count > prefix.utf8.count, bytes.starts(with: prefix.utf8), bytes[prefix.utf8.count] == UInt8(ascii: "/") else {
            throw .invalidArgument("The check names no original path: Envoy's path_prefix is \(prefix), followed by the request's path.")
        }
        let original = bytes[prefix.utf8.count...]
        let pathEnd = original.firstIndex(of: UInt8(ascii: "?")) ?? original.endIndex
        guard isNormalized(original[..<pathEnd]) else {
            throw .invalidArgument("The original path has a dot segment, an encoded dot, slash, backslash, NUL, percent sign or semicolon, a backslash, a semicolon or an empty segment.")
        }
        guard original.allSatisfy({ $0 > 32 && $0 < 127 }) else {
            throw .invalidArgument("The original request-target has a byte outside printable ASCII.")
        }
        return String(decoding: original, as: UTF8.self)
    }

    /// Whether `path` passes the shipped gateways' `unnormalized` rule, byte for byte the
    /// Caddyfile's `(?i)^[^?]*(%2e|%2f|%5c|%00|%25|%3b|\x5c|;|//|/\.\.?(/|\?|$))` (the `?` is cut off already).
    static func isNormalized(_ path: ArraySlice<UInt8>) -> Bool {
        let dot = UInt8(ascii: "."), slash = UInt8(ascii: "/")
        var index = path.startIndex
        while index < path.endIndex {
            let byte = path[index]
            if byte == UInt8(ascii: "\\") || byte == UInt8(ascii: ";") { return false }
            if byte == UInt8(ascii: "%"), index + 2 < path.endIndex {
                let pair = (path[index + 1], path[index + 2] | 0x20)
                switch pair {
                case (UInt8(ascii: "2"), UInt8(ascii: "e")), (UInt8(ascii: "2"), UInt8(ascii: "f")),
                     (UInt8(ascii: "5"), UInt8(ascii: "c")), (UInt8(ascii: "0"), UInt8(ascii: "0")),
                     (UInt8(ascii: "2"), UInt8(ascii: "5")), (UInt8(ascii: "3"), UInt8(ascii: "b")): return false
                default: break
                }
            }
            if byte == slash {
                // "/" then "." or "..", then "/" or the end (";" is refused anywhere).
                var next = index + 1
                if next < path.endIndex, path[next] == slash { return false }
                if next < path.endIndex, path[next] == dot {
                    next += 1
                    if next < path.endIndex, path[next] == dot { next += 1 }
                    if next == path.endIndex || path[next] == slash { return false }
                }
            }
            index += 1
        }
        return true
    }
}

/// A step-up rule of `/v1/authz` (`--authz-step-up PATH=SECONDS`): the original requests whose
/// path is `PATH`, in any letter case, alone or followed by `/`, `.` or `;` (the shipped nginx
/// location `~* "^/api/transfer(?:[/.;]|$)"`), need an authentication within `SECONDS`
/// (RFC 9470 `max_age`), as a `verify?max_age=` does. The path is compared percent-decoded,
/// so `/api/tr%61nsfer` is `/api/transfer`, as nginx and the app see it.
package struct StepUpPath: Sendable, Equatable {
    /// Lower-cased, starting with `/`, without a trailing `/`.
    package let path: String
    package let maxAge: Duration

    /// `PATH=SECONDS`: a path of printable ASCII starting with `/` (no query, no dot segment,
    /// no percent-escape), then 0 to `VerifyQuery.maximumSeconds` seconds; nil otherwise.
    package init?(_ text: String) {
        guard let equals = text.lastIndex(of: "=") else { return nil }
        var path = Substring(text[..<equals])
        let seconds = text[text.index(after: equals)...]
        guard path.hasPrefix("/"), path.utf8.allSatisfy({ $0 > 32 && $0 < 127 && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "%") }),
              AuthzTarget.isNormalized(Array(path.utf8)[...]),
              (1...10).contains(seconds.utf8.count), seconds.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              let value = Int64(seconds), value <= VerifyQuery.maximumSeconds else { return nil }
        while path.count > 1, path.hasSuffix("/") { path = path.dropLast() }
        self.path = path.lowercased()
        self.maxAge = .seconds(value)
    }

    /// Whether `originalTarget` (path and query, already `AuthzTarget`-checked) is under this rule.
    func matches(_ originalTarget: String) -> Bool {
        let pathPart = originalTarget.utf8.prefix { $0 != UInt8(ascii: "?") }
        let decoded = Self.lowercasedPercentDecoded(pathPart)
        let rule = Array(path.utf8)
        guard decoded.starts(with: rule) else { return false }
        if rule == [UInt8(ascii: "/")] { return true }
        guard decoded.count > rule.count else { return true }
        return [UInt8(ascii: "/"), UInt8(ascii: "."), UInt8(ascii: ";")].contains(decoded[rule.count])
    }

    /// The tightest `max_age` of the rules `originalTarget` falls under; nil for none.
    static func maxAge(for originalTarget: String, in rules: [StepUpPath]) -> Duration? {
        rules.filter { $0.matches(originalTarget) }.map(\.maxAge).min()
    }

    /// ASCII letters lower-cased after every `%XX` is decoded (a malformed escape stays as it is).
    static func lowercasedPercentDecoded<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        let input = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            var byte = input[index]
            if byte == UInt8(ascii: "%"), index + 2 < input.count, input[(index + 1)...(index + 2)].allSatisfy(\.isHexDigit),
               let value = UInt8(String(decoding: input[(index + 1)...(index + 2)], as: UTF8.self), radix: 16) {
                byte = value
                index += 2
            }
            out.append((UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte)
            index += 1
        }
        return out
    }
}

private extension UInt8 {
    var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self | 0x20)
    }
}
