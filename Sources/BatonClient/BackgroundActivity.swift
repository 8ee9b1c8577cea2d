import Foundation

/// Asks the system for time to finish an exchange when the app goes to the background
/// (`ProcessInfo.performExpiringActivity`, iOS, tvOS, watchOS, visionOS), so that an app is not
/// suspended between the server's answer and the store's write. Elsewhere it does nothing.
/// Apple-only code: not compiled on Linux (docs/client.md, "What was compiled where").
final class BackgroundActivity: @unchecked Sendable {
    // @unchecked: the one stored property is a DispatchSemaphore, which is thread-safe (iOS 16's
    // SDK does not declare it Sendable; later ones do).
    #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
    private let finished = DispatchSemaphore(value: 0)
    #endif

    /// Begins the activity; `end()` ends it.
    init(reason: String) {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        ProcessInfo.processInfo.performExpiringActivity(withReason: reason) { [self] expired in
            // The block runs on a queue of its own; the activity lasts while it does not return.
            // Called again with `expired` when the time is up: the first call must return
            // then too (the exchange goes on; the successor is saved when the app resumes).
            if expired { self.finished.signal() } else { self.finished.wait() }
        }
        #endif
    }

    /// Ends the activity.
    func end() {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        finished.signal()
        #endif
    }
}
