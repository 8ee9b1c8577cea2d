/// The rules a new password must meet, wherever it is set: `baton admin user add` and
/// `user passwd`, and a user's own change through `POST /v1/password`. The one copy.
package enum PasswordRules {
    /// Passwords shorter than this (in UTF-8 bytes) are refused.
    package static let minimumLength = 8
    /// Longer passwords are refused (bounds the work an attacker can make us do per attempt).
    package static let maximumLength = 1024

    /// Checks `password` as a new password.
    /// - Parameter name: how the message names it (`Password`, or the API's field `new_password`).
    /// - Throws: `.invalidArgument` naming `name` and the bound it misses.
    package static func validate(_ password: String, name: String = "Password") throws(BatonError) {
        let length = password.utf8.count
        guard length >= minimumLength else {
            throw .invalidArgument("\(name) must be at least \(minimumLength) bytes (UTF-8).")
        }
        guard length <= maximumLength else {
            throw .invalidArgument("\(name) must be at most \(maximumLength) bytes (UTF-8).")
        }
    }
}
