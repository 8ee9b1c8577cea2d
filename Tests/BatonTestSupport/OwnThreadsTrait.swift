import Testing

/// Runs every test of a suite (or one test) on `TestThreadPool`'s threads instead of Swift's
/// cooperative pool: for tests whose outcome depends on continuations arriving in time.
package struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    package var isRecursive: Bool { true }

    /// Runs `function` with the pool as the task's preferred executor.
    package func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(TestThreadPool.shared) { try await function() }
    }
}

extension Trait where Self == OwnThreadsTrait {
    /// See `OwnThreadsTrait`.
    package static var ownThreads: Self { Self() }
}
