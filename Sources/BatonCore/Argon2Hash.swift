/// An argon2id hash in the PHC string format libargon2 writes and reads:
/// `$argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<hash>`, salt and hash in standard
/// base64 without padding. Pure: parsing and formatting only.
package struct Argon2Hash: Equatable, Sendable {
    /// The only version written and accepted: argon2 1.3 (0x13).
    package static let version = 19

    package var memoryKiB: UInt32
    package var iterations: UInt32
    package var parallelism: UInt32
    package var salt: [UInt8]
    package var hash: [UInt8]

    package init(memoryKiB: UInt32, iterations: UInt32, parallelism: UInt32, salt: [UInt8], hash: [UInt8]) {
        self.memoryKiB = memoryKiB
        self.iterations = iterations
        self.parallelism = parallelism
        self.salt = salt
        self.hash = hash
    }

    /// Parses `text`; nil for anything but a well-formed argon2id v=19 string.
    package init?(parsing text: String) {
        let fields = text.split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 6, fields[0].isEmpty, fields[1] == "argon2id", fields[2] == "v=\(Self.version)" else { return nil }
        var costs: [Substring: UInt32] = [:]
        for pair in fields[3].split(separator: ",", omittingEmptySubsequences: false) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, costs[parts[0]] == nil, parts[1].allSatisfy(\.isASCIIDigit), let value = UInt32(parts[1]) else { return nil }
            costs[parts[0]] = value
        }
        guard costs.count == 3, let m = costs["m"], let t = costs["t"], let p = costs["p"],
              let salt = Self.decode(fields[4]), let hash = Self.decode(fields[5]), !salt.isEmpty, !hash.isEmpty else { return nil }
        self.init(memoryKiB: m, iterations: t, parallelism: p, salt: salt, hash: hash)
    }

    /// The PHC string.
    package var text: String {
        "$argon2id$v=\(Self.version)$m=\(memoryKiB),t=\(iterations),p=\(parallelism)$\(Self.encode(salt))$\(Self.encode(hash))"
    }

    // Standard base64 differs from base64url only in "+" and "/" (RFC 4648 §4, §5).
    private static func encode(_ bytes: [UInt8]) -> String {
        String(Base64URL.encode(bytes).map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
    }

    private static func decode(_ text: Substring) -> [UInt8]? {
        guard !text.contains("-"), !text.contains("_") else { return nil }
        return Base64URL.decode(Array(text.utf8).map { $0 == UInt8(ascii: "+") ? UInt8(ascii: "-") : $0 == UInt8(ascii: "/") ? UInt8(ascii: "_") : $0 })
    }
}

private extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
