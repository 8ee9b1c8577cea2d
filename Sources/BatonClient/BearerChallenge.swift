/// The parameters of a `WWW-Authenticate: Bearer …` challenge (RFC 6750 §3, RFC 9470 §3):
/// `Bearer realm="baton", error="insufficient_user_authentication", max_age=300`, or of a
/// `DPoP …` challenge, which has the same form (RFC 9449 §7.1): `DPoP error="use_dpop_nonce"`.
/// Values may be tokens or quoted strings (RFC 9110 §11.2 makes them equivalent).
struct BearerChallenge: Sendable, Equatable {
    /// Parameter names (lowercased) and values (unquoted).
    var parameters: [String: String] = [:]

    /// Parses the header's value; a challenge of another scheme has no parameters.
    init(_ header: String) {
        var rest = Substring(header).drop { $0 == " " }
        guard let scheme = ["bearer", "dpop"].first(where: { rest.lowercased().hasPrefix($0 + " ") }) else { return }
        rest = rest.dropFirst(scheme.count)
        while true {
            rest = rest.drop { $0 == " " || $0 == "," }
            guard let equals = rest.firstIndex(of: "=") else { return }
            let name = rest[..<equals].trimmingSpaces.lowercased()
            rest = rest[rest.index(after: equals)...].drop { $0 == " " }
            var value = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                var escaped = false
                while let character = rest.first {
                    rest = rest.dropFirst()
                    if escaped {
                        value.append(character)
                        escaped = false
                    } else if character == "\\" {
                        escaped = true
                    } else if character == "\"" {
                        break
                    } else {
                        value.append(character)
                    }
                }
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                value = String(rest[..<end].trimmingSpaces)
                rest = rest[end...]
            }
            if !name.isEmpty { parameters[name] = value }
        }
    }

    /// The `error` parameter.
    var error: String? { parameters["error"] }

    /// The `max_age` parameter, in seconds.
    var maxAge: Int? { parameters["max_age"].flatMap { Int($0) } }
}

private extension Substring {
    /// Without leading and trailing spaces.
    var trimmingSpaces: Substring {
        var trimmed = drop { $0 == " " }
        while trimmed.last == " " { trimmed = trimmed.dropLast() }
        return trimmed
    }
}
