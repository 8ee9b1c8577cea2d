import Foundation
#if canImport(UIKit)
import UIKit
#endif

/// Runs an action once when protected data becomes available (the device unlocked after a
/// boot: `UIApplication.protectedDataDidBecomeAvailableNotification`), so that a session whose
/// Keychain was locked at launch reads it again by itself (issue 29, M9). Where UIKit is absent
/// (macOS, Linux) there is no such moment to wait for: the session reads again at the next call.
enum ProtectedDataWatch {
    /// Calls `action` at the next "protected data available" notification.
    static func once(_ action: @escaping @Sendable () async -> Void) {
        #if canImport(UIKit) && !os(watchOS)
        let token = TokenBox()
        let observer = NotificationCenter.default.addObserver(
            forName: UIApplication.protectedDataDidBecomeAvailableNotification, object: nil, queue: nil
        ) { _ in
            guard token.fire() else { return }  // once
            if let observer = token.take() { NotificationCenter.default.removeObserver(observer) }
            Task { await action() }
        }
        // A notification that came before `observer` was stored has fired already: remove it now.
        if token.store(observer) { NotificationCenter.default.removeObserver(observer) }
        #endif
    }

    /// The observer, and whether the notification came (it may come on any thread, even before
    /// the observer is stored).
    private final class TokenBox: @unchecked Sendable {
        // @unchecked: every property is guarded by `lock`.
        private let lock = NSLock()
        private var stored: (any NSObjectProtocol)?
        private var fired = false

        /// Marks the notification as come; false when it had come already.
        func fire() -> Bool {
            lock.lock()
            defer { lock.unlock() }
            if fired { return false }
            fired = true
            return true
        }

        /// Keeps the observer; true when the notification came already (remove it then).
        func store(_ observer: any NSObjectProtocol) -> Bool {
            lock.lock()
            defer { lock.unlock() }
            stored = observer
            return fired
        }

        /// The observer, once.
        func take() -> (any NSObjectProtocol)? {
            lock.lock()
            defer { lock.unlock() }
            let taken = stored
            stored = nil
            return taken
        }
    }
}
