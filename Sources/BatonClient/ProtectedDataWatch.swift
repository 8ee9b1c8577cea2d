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
        token.observer = NotificationCenter.default.addObserver(
            forName: UIApplication.protectedDataDidBecomeAvailableNotification, object: nil, queue: nil
        ) { _ in
            if let observer = token.take() { NotificationCenter.default.removeObserver(observer) }
            Task { await action() }
        }
        #endif
    }

    /// The observer, taken once (the notification may come on any thread).
    private final class TokenBox: @unchecked Sendable {
        // @unchecked: `stored` is guarded by `lock`.
        private let lock = NSLock()
        private var stored: (any NSObjectProtocol)?
        var observer: (any NSObjectProtocol)? {
            get { lock.lock(); defer { lock.unlock() }; return stored }
            set { lock.lock(); stored = newValue; lock.unlock() }
        }
        func take() -> (any NSObjectProtocol)? {
            lock.lock()
            defer { lock.unlock() }
            let taken = stored
            stored = nil
            return taken
        }
    }
}
