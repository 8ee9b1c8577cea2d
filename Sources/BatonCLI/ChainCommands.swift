import BatonCore
import BatonStorage

/// `baton admin chains` and `baton admin revoke`.
enum ChainCommands {
    static let policyOptions: [OptionParser.Option] = [
        .init(name: "max-session", valueName: "duration", help: "The server's --max-session, to tell which chains ended. (default: 30d)"),
        .init(name: "exchange-window", valueName: "duration", help: "The server's --exchange-window. (default: 7d)"),
    ]

    static let all: [Subcommand] = [
        Subcommand(
            path: "chains", overview: "List chains: live ones, or all with --all.",
            discussion: "STATE is live, revoked (reason), or expired (session | exchange window). BOUND TO KEY is the thumbprint (jkt) of the device key a DPoP-bound chain is bound to; - for a bearer chain.",
            usage: "[--user <name>] [--all] [--db <path>]",
            options: [.init(name: "user", valueName: "name", help: "Only this user's chains.", environment: false),
                      .init(name: "all", valueName: nil, help: "Include ended chains (revoked or expired).", environment: false),
                      AdminCommand.database] + policyOptions
        ) { invocation in
            let policy: Policy
            do throws(UsageError) { policy = try invocation.policy() } catch { return invocation.usageError(error.message) }
            return invocation.withAdminStore(readOnly: true, policy: policy) { store throws(BatonError) in
                let now = SystemClock().now()
                let rows = try store.chains(ofUser: invocation.value("user"), includeEnded: invocation.flag("all")).map { chain in
                    [chain.head.id.description, chain.username, chain.head.deviceID, chain.head.deviceClass.rawValue,
                     String(chain.head.generation), chain.head.createdAt.rfc3339, chain.lastExchangeAt?.rfc3339 ?? "-",
                     chain.head.expiresAt.rfc3339, chain.state(at: now, policy), chain.head.jkt ?? "-"]
                }
                invocation.output.out(table(["CHAIN", "USER", "DEVICE", "CLASS", "GEN", "CREATED", "LAST EXCHANGE", "HEAD EXPIRES", "STATE", "BOUND TO KEY (JKT)"], rows))
                return .success
            }
        },
        Subcommand(
            path: "revoke", overview: "Revoke a chain, every live chain of a user, or every chain (reason admin).",
            discussion: """
                --all revokes every chain not yet revoked: everyone logs in again. It asks for
                confirmation at the terminal unless --yes is given, and needs --reason.
                The reason text is recorded in each chain_revoked event (detail.note).
                """,
            usage: "(--chain <id> | --user <name> | --all) [<options>]",
            options: [.init(name: "chain", valueName: "id", help: "The chain (16 hex digits, as `chains` prints).", environment: false),
                      .init(name: "user", valueName: "name", help: "Every live chain of this user.", environment: false),
                      .init(name: "all", valueName: nil, help: "Every chain: everyone logs in again.", environment: false),
                      .init(name: "reason", valueName: "text", help: "Why, for the audit trail (needed with --all).", environment: false),
                      .init(name: "yes", valueName: nil, help: "Do not ask for confirmation (--all).", environment: false),
                      AdminCommand.database]
        ) { invocation in
            let note = invocation.value("reason")
            if let note, !RevokeAll.isValidReason(note) {
                return invocation.usageError("Invalid value '\(note)' for '--reason <text>': expected 1-200 characters, no control characters.")
            }
            switch (invocation.value("chain"), invocation.value("user"), invocation.flag("all")) {
            case (let text?, nil, false):
                guard let id = ChainID(hex: text) else {
                    return invocation.usageError("Invalid value '\(text)' for '--chain <id>': expected 16 hex digits.")
                }
                if invocation.flag("yes") { return invocation.usageError("'--yes' applies only to '--all'.") }
                return invocation.withAdminStore { store throws(BatonError) in
                    invocation.output.out(try store.revokeChain(id, note: note, context: .admin) ? "Revoked chain \(id)." : "Chain \(id) was already revoked.")
                    return .success
                }
            case (nil, let name?, false):
                if invocation.flag("yes") { return invocation.usageError("'--yes' applies only to '--all'.") }
                return invocation.withAdminStore { store throws(BatonError) in
                    let revoked = try store.revokeChains(ofUser: name, note: note, context: .admin)
                    let list = revoked.isEmpty ? "" : ": " + revoked.map(\.description).joined(separator: ", ")
                    invocation.output.out("Revoked \(UserCommands.chainCount(revoked)) of '\(name)'\(list).")
                    return .success
                }
            case (nil, nil, true):
                return RevokeAll.run(invocation, note: note)
            default:
                return invocation.usageError("Give exactly one of '--chain <id>', '--user <name>' and '--all'.")
            }
        },
    ]
}
