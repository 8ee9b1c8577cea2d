import Foundation

/// The environment the tests give the processes they start: the test process's own without
/// its `BATON_*` variables, plus what the test asks for.
///
/// The test command's knobs (`BATON_FUZZ_SECONDS=0 ./scripts/test`, `BATON_SOAK_SECONDS`,
/// `BATON_CRASH_KILLS`, `BATON_PRODUCTS`, …) are read by scripts/test and by the tests, never by
/// `baton`; inherited, they would reach every server and admin command the tests start, which
/// warns about a `BATON_` variable no option reads, and the tests that compare standard error
/// exactly would fail for a reason of the runner's. A test that wants a `BATON_` variable in a
/// child says so in `extra`.
package enum ChildEnvironment {
    /// `inherited` without its `BATON_*` variables, then `extra` (which wins).
    package static func make(inheriting inherited: [String: String] = ProcessInfo.processInfo.environment,
                             _ extra: [String: String] = [:]) -> [String: String] {
        inherited.filter { !$0.key.hasPrefix("BATON_") }.merging(extra) { $1 }
    }
}
