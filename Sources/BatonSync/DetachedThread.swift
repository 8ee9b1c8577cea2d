import Glibc

/// Starts a detached thread running `body`.
/// - Parameter stackSize: bytes of stack; 512 KiB by default (connection threads are many),
///   nil for the system's default (threads that run SQLite or libpq, whose stacks can be deep).
package func spawn(stackSize: Int? = 512 * 1024, _ body: @escaping @Sendable () -> Void) {
    final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    if let stackSize { pthread_attr_setstacksize(&attributes, stackSize) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    var thread = pthread_t()
    let created = pthread_create(&thread, &attributes, { raw in
        Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
        return nil
    }, Unmanaged.passRetained(Box(body)).toOpaque())
    pthread_attr_destroy(&attributes)
    precondition(created == 0, "pthread_create failed: \(created)")
}
