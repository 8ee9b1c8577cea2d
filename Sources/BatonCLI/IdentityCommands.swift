import BatonCore
import BatonIdentity
import BatonStorage
import Foundation

/// `baton admin issuer add|list|remove` and `baton admin identity link|unlink|list`: the
/// identity providers whose tokens `/v1/token-exchange` accepts, and the identities linked to
/// accounts (docs/identity.md). The settings live in the database, so every instance reads
/// the same ones, at once, without a restart.
enum IdentityCommands {
    private static func option(_ name: String, _ valueName: String?, _ help: String, repeatable: Bool = false) -> OptionParser.Option {
        OptionParser.Option(name: name, valueName: valueName, help: help, repeatable: repeatable, environment: false)
    }

    static let issuerOption = option("issuer", "issuer", "The issuer's name (baton admin issuer list) or its exact iss URL.")
    static let subjectOption = option("subject", "sub", "The identity's sub claim at that issuer.")

    static let all: [Subcommand] = [
        Subcommand(
            path: "issuer add", overview: "Accept an identity provider's tokens at /v1/token-exchange.",
            discussion: """
                <name> is the operator's short name (lowercase letters, digits, -): accounts
                this issuer creates are named <name>-<16 hex digits>. Keys are found by OIDC
                discovery at <issuer>/.well-known/openid-configuration (https only; --ca-file
                for a private CA), or given with --jwks-file (air-gapped providers). Every
                instance uses the new issuer at its next token exchange.
                """,
            usage: "<name> --issuer <url> --client-id <id>... [--token-type id_token|jwt] [--algorithm <alg>...] [--jwks-file <path>] [--ca-file <path>] [--new-users create|linked-only] [--max-age <duration>] [--skew <duration>] [--db <path>]",
            arguments: [("<name>", "The issuer's short name.")],
            options: [
                option("issuer", "url", "The exact iss of its tokens (https)."),
                option("client-id", "id", "An accepted audience: the app's client id (ID tokens) or Baton's identifier (assertions).", repeatable: true),
                option("token-type", "type", "id_token (an OIDC provider; default) or jwt (the bank backend's RFC 7523 assertion)."),
                option("algorithm", "alg", "An allowed algorithm: RS256, PS256, ES256, EdDSA. (default: RS256 and ES256)", repeatable: true),
                option("jwks-file", "path", "A JWK Set to use instead of discovery."),
                option("ca-file", "path", "PEM certificates to trust for discovery and JWKS instead of the system's."),
                option("new-users", "policy", "create (an account on first login; default) or linked-only (refused until linked)."),
                option("max-age", "duration", "How old a token's iat may be. (default: 10m)"),
                option("skew", "duration", "Clock skew allowed on exp, iat, nbf and auth_time. (default: 60s)"),
                AdminCommand.database,
            ],
            positionalCount: 1
        ) { invocation in
            let issuer: IdentityIssuer
            do throws(UsageError) { issuer = try issuerSettings(invocation) } catch { return invocation.usageError(error.message) }
            return invocation.withAdminStore { store throws(BatonError) in
                try store.addIdentityIssuer(IdentityIssuerRecord(name: issuer.name, issuer: issuer.issuer, settings: issuer.settingsJSON,
                                                                 createdAt: SystemClock().now()))
                invocation.output.out("Added issuer '\(issuer.name)' (\(TerminalText.escape(issuer.issuer)), \(issuer.tokenType.shortName)): "
                    + "its tokens are accepted at /v1/token-exchange from the next request on every instance.")
                return .success
            }
        },
        Subcommand(
            path: "issuer list", overview: "Show the identity providers whose tokens are accepted.",
            usage: "[--db <path>]", options: [AdminCommand.database]
        ) { invocation in
            invocation.withAdminStore(readOnly: true) { store throws(BatonError) in
                let rows = try store.identityIssuers().map { record -> [String] in
                    guard let issuer = IdentityIssuer(name: record.name, issuer: record.issuer, settingsJSON: record.settings) else {
                        return [record.name, record.issuer, "?", "(settings of a newer build)", "", "", "", record.createdAt.rfc3339]
                    }
                    return [issuer.name, issuer.issuer, issuer.tokenType.shortName, issuer.audiences.joined(separator: ","),
                            issuer.algorithms.map(\.rawValue).joined(separator: ","), issuer.staticKeys == nil ? (issuer.caPEM == nil ? "discovery" : "discovery (own CA)") : "static",
                            issuer.newUsers.rawValue, record.createdAt.rfc3339]
                }
                invocation.output.out(table(["NAME", "ISSUER", "TYPE", "AUDIENCES", "ALGORITHMS", "KEYS", "NEW USERS", "ADDED"],
                                            rows.map { $0.map(TerminalText.escape) }))
                return .success
            }
        },
        Subcommand(
            path: "issuer remove", overview: "Stop accepting an identity provider's tokens.",
            discussion: """
                Its linked identities stay (adding the issuer again restores them), and so do
                the sessions its users hold: revoke those with `baton admin revoke --user`.
                """,
            usage: "<name> [--db <path>]", arguments: [("<name>", "The issuer's short name.")],
            options: [AdminCommand.database], positionalCount: 1
        ) { invocation in
            do throws(BatonError) { try IdentityIssuer.validateName(invocation.positional[0]) } catch { return invocation.usageError(error.message) }
            return invocation.withAdminStore { store throws(BatonError) in
                try store.removeIdentityIssuer(named: invocation.positional[0])
                invocation.output.out("Removed issuer '\(TerminalText.escape(invocation.positional[0]))': its tokens are refused from the next request on.")
                return .success
            }
        },
        Subcommand(
            path: "identity link", overview: "Link an identity provider's identity (iss, sub) to an account.",
            discussion: "For an issuer with --new-users linked-only, or to give an existing account a way in through the provider.",
            usage: "<user> --issuer <name|url> --subject <sub> [--db <path>]", arguments: [("<user>", "The account.")],
            options: [issuerOption, subjectOption, AdminCommand.database], positionalCount: 1
        ) { invocation in
            let subject: String
            do throws(UsageError) { subject = try subjectOption(invocation) } catch { return invocation.usageError(error.message) }
            return invocation.withAdminStore { store throws(BatonError) in
                let issuer = try resolveIssuer(invocation, store)
                try store.linkIdentity(issuer: issuer, subject: subject, to: invocation.positional[0])
                invocation.output.out("Linked \(TerminalText.escape(issuer)) sub \(TerminalText.escape(subject)) to '\(TerminalText.escape(invocation.positional[0]))'.")
                return .success
            }
        },
        Subcommand(
            path: "identity unlink", overview: "Unlink an identity from its account.",
            discussion: "The account's sessions are left alone: revoke them with `baton admin revoke --user`.",
            usage: "--issuer <name|url> --subject <sub> [--db <path>]",
            options: [issuerOption, subjectOption, AdminCommand.database]
        ) { invocation in
            let subject: String
            do throws(UsageError) { subject = try subjectOption(invocation) } catch { return invocation.usageError(error.message) }
            return invocation.withAdminStore { store throws(BatonError) in
                let issuer = try resolveIssuer(invocation, store)
                try store.unlinkIdentity(issuer: issuer, subject: subject)
                invocation.output.out("Unlinked \(TerminalText.escape(issuer)) sub \(TerminalText.escape(subject)).")
                return .success
            }
        },
        Subcommand(
            path: "identity list", overview: "Show the identities linked to accounts.",
            usage: "[--user <name>] [--db <path>]",
            options: [option("user", "name", "Only this account's identities."), AdminCommand.database]
        ) { invocation in
            invocation.withAdminStore(readOnly: true) { store throws(BatonError) in
                invocation.output.out(linkTable(try store.identityLinks(ofUser: invocation.value("user"))))
                return .success
            }
        },
    ]

    /// The table `identity list` and `user show` print.
    static func linkTable(_ links: [IdentityLink]) -> String {
        table(["USER", "ISSUER", "SUBJECT", "LINKED"], links.map { [$0.username, $0.issuer, $0.subject, $0.createdAt.rfc3339].map(TerminalText.escape) })
    }

    /// `--issuer` as a configured issuer's name, or an `https` URL taken as is (an issuer
    /// removed since still has its links).
    private static func resolveIssuer(_ invocation: Invocation, _ store: any AdminStore) throws(BatonError) -> String {
        guard let given = invocation.value("issuer"), !given.isEmpty else { throw .invalidArgument("--issuer is required (a name from baton admin issuer list, or an iss URL)") }
        if given.hasPrefix("https://") {
            try IdentityIssuer.validateIssuerURL(given)
            return given
        }
        guard let record = try store.identityIssuers().first(where: { $0.name.utf8.elementsEqual(given.utf8) }) else {
            throw .invalidArgument("--issuer: no issuer named '\(TerminalText.escape(given))' (baton admin issuer list)")
        }
        return record.issuer
    }

    /// `--subject`: a `sub` as an issuer can send it (1-255 bytes, no control or format
    /// character, as `SubjectTokenCheck` accepts), or a link that could never match is refused.
    private static func subjectOption(_ invocation: Invocation) throws(UsageError) -> String {
        guard let subject = invocation.value("subject"), !subject.isEmpty else { throw UsageError(message: "Missing expected option '--subject'.") }
        guard subject.utf8.count <= 255, !subject.unicodeScalars.contains(where: \.isControlOrFormat) else {
            throw UsageError(message: "Invalid value for '--subject': a sub is 1-255 bytes without control or format characters.")
        }
        return subject
    }

    /// `issuer add`'s settings, checked (`IdentityIssuer.validate`).
    private static func issuerSettings(_ invocation: Invocation) throws(UsageError) -> IdentityIssuer {
        guard let url = invocation.value("issuer") else { throw UsageError(message: "Missing expected option '--issuer'.") }
        let audiences = invocation.values["client-id"] ?? []
        var tokenType = SubjectTokenType.idToken
        if let text = invocation.value("token-type") {
            guard let parsed = SubjectTokenType(shortName: text) else {
                throw UsageError(message: "Invalid value '\(text)' for '--token-type': expected id_token or jwt.")
            }
            tokenType = parsed
        }
        var algorithms = IdentityAlgorithm.defaults
        if let texts = invocation.values["algorithm"] {
            algorithms = []
            for text in texts {
                guard let parsed = IdentityAlgorithm(rawValue: text) else {
                    throw UsageError(message: "Invalid value '\(text)' for '--algorithm': expected RS256, PS256, ES256 or EdDSA (never none or an HMAC).")
                }
                if !algorithms.contains(parsed) { algorithms.append(parsed) }
            }
        }
        var newUsers = IdentityIssuer.NewUsers.create
        if let text = invocation.value("new-users") {
            guard let parsed = IdentityIssuer.NewUsers(rawValue: text) else {
                throw UsageError(message: "Invalid value '\(text)' for '--new-users': expected create or linked-only.")
            }
            newUsers = parsed
        }
        var issuer = IdentityIssuer(name: invocation.positional[0], issuer: url, tokenType: tokenType, audiences: audiences,
                                    algorithms: algorithms, staticKeys: try file(invocation, "jwks-file"), caPEM: try file(invocation, "ca-file"),
                                    newUsers: newUsers)
        for (name, apply) in [("max-age", { (i: inout IdentityIssuer, d: Duration) in i.maxAge = d }),
                              ("skew", { (i: inout IdentityIssuer, d: Duration) in i.skew = d })] {
            guard let text = invocation.value(name) else { continue }
            guard let duration = parseDuration(text) else {
                throw UsageError(message: "Invalid value '\(text)' for '--\(name)': expected a duration such as 60s, 10m.")
            }
            apply(&issuer, duration)
        }
        do { try issuer.validate() } catch { throw UsageError(message: error.message) }
        return issuer
    }

    private static func file(_ invocation: Invocation, _ option: String) throws(UsageError) -> String? {
        guard let path = invocation.value(option) else { return nil }
        guard let data = FileManager.default.contents(atPath: path), data.count <= 1 << 20 else {
            throw UsageError(message: "--\(option): cannot read \(path) (missing, unreadable, or over 1 MiB).")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw UsageError(message: "--\(option): \(path) is not UTF-8 text.") }
        return text
    }
}
