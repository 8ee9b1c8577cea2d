/// Where `baton --version` finds the commit it was built from, with no file to generate first.
///
/// scripts/stamp-build writes the git-ignored `Generated/BuildCommit.swift`, which declares
/// `BatonCommand.buildCommit` on the type itself; a member of the type shadows this protocol's
/// default, so a build with that file prints the commit, and a build without it (a fresh clone,
/// a bare `swift build`, Xcode's sandboxed manifest evaluation) prints "unknown". The manifest
/// writes nothing.
package protocol BuildStamp {}

extension BuildStamp {
    /// The commit when scripts/stamp-build has not run.
    static var buildCommit: String { "unknown" }
}

extension BatonCommand: BuildStamp {}
