import BatonCore
import BatonStore

/// `baton admin chains` and `baton admin revoke`.
enum ChainCommands {
    static let policyOptions: [OptionParser.Option] = [
        .init(name: "max-session", valueName: "duration", help: "The server's --max-session, to tell which chains ended. (default: 30d)"),
        .init(name: "exchange-window", valueName: "duration", help: "The server's --exchange-window. (default: 7d)"),
    ]

    static let all: [Subcommand] = [
        Subcommand(
            path: "chains", overview: "List chains: live ones, or all with --all.",
            discussion: "STATE is live, revoked (reason), or expired (session | exchange window).",
            usage: "[--user <name>] [--all] [--db <path>]",
            options: [.init(name: "user", valueName: "name", help: "Only this user's chains.", environment: false),
                      .init(name: "all", valueName: nil, help: "Include ended chains (revoked or expired).", environment: false),
                      AdminCommand.database] + policyOptions
        ) { invocation in
            let policy: Policy
            do throws(UsageError) { policy = try invocation.policy() } catch { return invocation.usageError(error.message) }
            return invocation.withStore(readOnly: true, policy: policy) { store throws(BatonError) in
                let now = SystemClock().now()
                let rows = try store.chains(ofUser: invocation.value("user"), includeEnded: invocation.flag("all")).map { chain in
                    [chain.head.id.description, chain.username, chain.head.deviceID, chain.head.deviceClass.rawValue,
                     String(chain.head.generation), chain.head.createdAt.rfc3339, chain.lastExchangeAt?.rfc3339 ?? "-",
                     chain.head.expiresAt.rfc3339, chain.state(at: now, policy)]
                }
                invocation.output.out(table(["CHAIN", "USER", "DEVICE", "CLASS", "GEN", "CREATED", "LAST EXCHANGE", "HEAD EXPIRES", "STATE"], rows))
                return .success
            }
        },
        Subcommand(
            path: "revoke", overview: "Revoke a chain, or every live chain of a user (reason admin).",
            usage: "(--chain <id> | --user <name>) [--db <path>]",
            options: [.init(name: "chain", valueName: "id", help: "The chain (16 hex digits, as `chains` prints).", environment: false),
                      .init(name: "user", valueName: "name", help: "Every live chain of this user.", environment: false),
                      AdminCommand.database]
        ) { invocation in
            switch (invocation.value("chain"), invocation.value("user")) {
            case (let text?, nil):
                guard let id = ChainID(hex: text) else {
                    return invocation.usageError("Invalid value '\(text)' for '--chain <id>': expected 16 hex digits.")
                }
                return invocation.withStore { store throws(BatonError) in
                    invocation.output.out(try store.revokeChain(id) ? "Revoked chain \(id)." : "Chain \(id) was already revoked.")
                    return .success
                }
            case (nil, let name?):
                return invocation.withStore { store throws(BatonError) in
                    let revoked = try store.revokeChains(ofUser: name)
                    let list = revoked.isEmpty ? "" : ": " + revoked.map(\.description).joined(separator: ", ")
                    invocation.output.out("Revoked \(UserCommands.chainCount(revoked)) of '\(name)'\(list).")
                    return .success
                }
            default:
                return invocation.usageError("Give exactly one of '--chain <id>' and '--user <name>'.")
            }
        },
    ]
}
