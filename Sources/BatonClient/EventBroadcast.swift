import Foundation

/// `BatonSession.events`: every subscriber gets a stream of its own (a second `for await` on one
/// `AsyncStream` is a crash), each event goes to every live subscriber, and the newest
/// `backlogLimit` events published while nobody listened go to the next one that subscribes,
/// so that a login screen shown late still learns why the session ended.
final class EventBroadcast<Event: Sendable>: @unchecked Sendable {
    // @unchecked: every stored property is guarded by `lock`.
    private let lock = NSLock()
    private var subscribers: [UUID: AsyncStream<Event>.Continuation] = [:]
    private var backlog: [Event] = []
    private var finished = false
    private let backlogLimit: Int
    /// Names each subscriber (`ClientEnvironment.newID`).
    private let newID: @Sendable () -> UUID

    /// A broadcast keeping the newest `backlogLimit` events for the next subscriber while there
    /// is none, naming subscribers with `newID`.
    init(backlogLimit: Int, newID: @escaping @Sendable () -> UUID = { UUID() }) {
        self.backlogLimit = backlogLimit
        self.newID = newID
    }

    /// A new stream: the backlog first, then every event published from now on.
    func subscribe() -> AsyncStream<Event> {
        let (stream, continuation) = makeAsyncStream(of: Event.self, bufferingPolicy: .bufferingNewest(backlogLimit))
        let id = newID()
        lock.lock()
        if finished {
            lock.unlock()
            continuation.finish()
            return stream
        }
        for event in backlog { continuation.yield(event) }
        backlog.removeAll()
        subscribers[id] = continuation
        lock.unlock()
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        return stream
    }

    /// Sends `event` to every subscriber, or keeps it for the next one when there is none.
    func publish(_ event: Event) {
        lock.lock()
        defer { lock.unlock() }
        guard !finished else { return }
        if subscribers.isEmpty {
            backlog.append(event)
            if backlog.count > backlogLimit { backlog.removeFirst(backlog.count - backlogLimit) }
        } else {
            for continuation in subscribers.values { continuation.yield(event) }
        }
    }

    /// Ends every stream; later subscribers get an ended stream.
    func finish() {
        lock.lock()
        let ending = subscribers.values
        subscribers.removeAll()
        backlog.removeAll()
        finished = true
        lock.unlock()
        for continuation in ending { continuation.finish() }
    }

    private func remove(_ id: UUID) {
        lock.lock()
        subscribers[id] = nil
        lock.unlock()
    }
}
