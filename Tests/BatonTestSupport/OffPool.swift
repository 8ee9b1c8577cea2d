import Foundation

/// Runs blocking work (a cluster start, a kill/promote, a load loop) on its own thread and awaits
/// its result, so that it never holds one of the few threads of Swift's cooperative pool (two
/// on a two-core machine) that other async tests are waiting for.
package func offPool<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Swift.Result { try body() }) }.start()
    }
}
