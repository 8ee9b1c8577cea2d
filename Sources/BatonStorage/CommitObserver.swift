/// The closure a store hands each committed transaction's audit events to
/// (`LineageStore.observeCommits`), kept in a struct so that a store's lock holds the struct.
///
/// A closure held directly in a generic lock (`Mutex<(([AuditEvent]) -> Void)?>`) and read
/// with `withLock { $0 }` is converted to the lock's generic form and back at every `inout`
/// access, and each conversion wraps it in one more thunk: after n reads a call runs through
/// 2n nested thunks. The server read it once per committed batch, so its CPU per exchange
/// grew with uptime, and after 130,943 exchanges the writer thread's stack overflowed
/// (SIGSEGV; `CommitObserverTests`). A struct's stored closure is never converted.
package struct CommitObserver: Sendable {
    /// Called with a committed transaction's events, on the committing thread.
    package let notify: @Sendable ([AuditEvent]) -> Void

    package init(_ notify: @escaping @Sendable ([AuditEvent]) -> Void) { self.notify = notify }
}
