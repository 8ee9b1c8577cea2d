import Foundation
#if canImport(os)
import os
#endif

/// One diagnostic of the client: why a session ended, why an exchange failed and the session
/// was kept, a store that could not be read or written, a login that could not bind. Enough to
/// answer "why was this user logged out?" from a device's log (issue 29, M7). It never carries a
/// token, a password or a key: `message` is constant text, `metadata` holds identifiers (chain
/// id, generation) and reasons only.
///
/// Without a handler of the app's (`BatonConfiguration.diagnostics`), diagnostics go to the
/// unified log on Apple platforms (`os.Logger`, subsystem `BatonClient`, category `session`;
/// the metadata logged `.private`, so a log taken from a user's device shows it only with the
/// device's consent); elsewhere nowhere.
public struct BatonDiagnostic: Sendable, Equatable {
    /// How much it matters.
    public enum Level: String, Sendable {
        /// Routine: an exchange adopted from another process, a store read retried.
        case info
        /// Something failed and the session carried on (an exchange to retry, a save pending).
        case notice
        /// The session ended (log in again), or cannot work as configured.
        case error
    }

    /// How much it matters.
    public var level: Level
    /// What happened: constant text, the same for every occurrence.
    public var message: String
    /// Identifiers and reasons: `chain`, `generation`, `reason`, `error`. Never a token.
    public var metadata: [String: String]

    /// A diagnostic from its parts.
    public init(level: Level, message: String, metadata: [String: String] = [:]) {
        self.level = level
        self.message = message
        self.metadata = metadata
    }
}

/// Where a session's diagnostics go: the app's handler, else the unified log (Apple).
struct DiagnosticSink: Sendable {
    let handler: (@Sendable (BatonDiagnostic) -> Void)?

    /// Records one diagnostic.
    func record(_ level: BatonDiagnostic.Level, _ message: String, _ metadata: [String: String] = [:]) {
        let diagnostic = BatonDiagnostic(level: level, message: message, metadata: metadata)
        if let handler {
            handler(diagnostic)
            return
        }
        #if canImport(os)
        let details = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let type: OSLogType = switch level {
        case .info: .info
        case .notice: .default
        case .error: .error
        }
        // Made per call: iOS 16's SDK does not declare Logger Sendable, so it cannot be a shared
        // static; os_log_create caches the log object for the subsystem and category.
        Logger(subsystem: "BatonClient", category: "session")
            .log(level: type, "\(message, privacy: .public) \(details, privacy: .private)")
        #endif
    }
}
