import BatonCore
import BatonStorage
import Glibc

/// `baton admin revoke --all`: every chain, after the operator confirmed (at the terminal, or
/// with `--yes`). Used after restoring a backup, and when every session may be compromised.
enum RevokeAll {
    /// The answer that confirms at the prompt.
    static let confirmationWord = "yes"

    /// Whether `text` may be recorded as the reason: 1-200 characters, none of them control characters.
    static func isValidReason(_ text: String) -> Bool {
        (1...200).contains(text.count) && !text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// Whether the line the operator typed confirms (`yes`, surrounding spaces ignored).
    static func confirms(_ answer: String?) -> Bool {
        answer?.trimmingSpaces() == confirmationWord
    }

    /// Checks the flags, asks unless `--yes`, revokes, and reports how many chains ended.
    static func run(_ invocation: Invocation, note: String?) -> BatonCommand.ExitCode {
        guard let note else {
            return invocation.usageError("'--all' needs '--reason <text>': say why, for the audit trail.")
        }
        let confirmed = invocation.flag("yes")
        if !confirmed, isatty(0) != 1 {
            return invocation.usageError(
                "Refusing to revoke every chain without confirmation: standard input is not a terminal. Pass --yes to confirm.")
        }
        return invocation.withAdminStore { store throws(BatonError) in
            if !confirmed {
                let count = try store.unrevokedChainCount()
                guard count > 0 else {
                    invocation.output.out("No live chains: nothing to revoke.")
                    return .success
                }
                writeStandardError("Revoke all \(plural(count, "chain"))? "
                    + "Every user must log in again. Type '\(confirmationWord)' to confirm: ")
                guard confirms(Swift.readLine(strippingNewline: true)) else {
                    invocation.output.err("Error: Not confirmed; nothing was revoked.")
                    return .failure
                }
            }
            let revoked = try store.revokeAllChains(note: note, context: .admin, batchSize: 500)
            invocation.output.out("Revoked \(plural(revoked, "chain")) (reason admin: \(note)); every user must log in again.")
            return .success
        }
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        var text = Substring(self)
        while text.first == " " { text.removeFirst() }
        while text.last == " " { text.removeLast() }
        return String(text)
    }
}
