import BatonTestSupport
import Foundation
import Testing

/// An app depends on BatonClient exactly as docs/client.md says: a separate package whose
/// manifest names the product `BatonClient` in the package `baton`, the identity SwiftPM takes
/// from the last path component of the dependency's URL or path (lowercased), never from
/// `name: "Baton"` in our manifest. Built with `swift build` and run.
///
/// Cost: the app sits at a fixed path under .build (git-ignored), `client-dependency/app`,
/// next to `client-dependency/baton`, a symlink to this repository (the name a clone of
/// `…/baton.git` gets). The first build compiles BatonClient for it (about a minute on 2
/// busy cores); later runs are incremental, about 5 s when the client did not change. A
/// temporary directory would rebuild everything every time.
struct ClientDependencyTests {
    static let manifest = """
        // swift-tools-version:6.0
        import PackageDescription

        let package = Package(
            name: "App",
            dependencies: [
                .package(path: "../baton"),  // an app: .package(url: "https://…/baton.git", from: "…")
            ],
            targets: [
                .executableTarget(name: "App", dependencies: [
                    .product(name: "BatonClient", package: "baton"),
                ]),
            ]
        )

        """

    static let main = """
        import BatonClient
        import Foundation

        let session = BatonSession(configuration: BatonConfiguration(baseURL: URL(string: "https://api.example.com")!, appName: "App/1.0"),
                                   store: MemoryCredentialStore())
        print("BatonClient \\(BatonConfiguration.libraryVersion): \\(await session.restore())")

        """

    @Test func appPackageDependsOnTheProductBatonClientOfThePackageBaton() throws {
        let root = repositoryRoot + "/.build/client-dependency"
        let app = root + "/app"
        try FileManager.default.createDirectory(atPath: app + "/Sources/App", withIntermediateDirectories: true)
        let link = root + "/baton"
        if (try? FileManager.default.destinationOfSymbolicLink(atPath: link)) != repositoryRoot {
            try? FileManager.default.removeItem(atPath: link)
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: repositoryRoot)
        }
        try Self.writeIfChanged(Self.manifest, to: app + "/Package.swift")
        try Self.writeIfChanged(Self.main, to: app + "/Sources/App/main.swift")
        // SwiftPM leaves TemporaryDirectory.* and lock files in TMPDIR: give it one of its own.
        let scratch = try temporaryDirectory("baton-client-dependency-")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let swift = try #require(Self.swiftExecutable, "no swift on PATH")
        let build = try runCommand(swift, ["build", "--package-path", app], environment: ["TMPDIR": scratch])
        #expect(build.status == 0, "\(build.stdout)\(build.stderr)")
        let run = try runCommand(app + "/.build/debug/App", [])
        #expect(run.status == 0 && run.stdout.hasPrefix("BatonClient ")
                && run.stdout.hasSuffix(": loggedOut(BatonClient.LoginRequiredReason.notLoggedIn)\n"), "\(run)")
    }

    /// Writes `text` unless the file holds it already (an unchanged file rebuilds nothing).
    static func writeIfChanged(_ text: String, to path: String) throws {
        if (try? String(contentsOfFile: path, encoding: .utf8)) != text {
            try text.write(toFile: path, atomically: false, encoding: .utf8)
        }
    }

    /// The `swift` driver: on PATH, else the toolchain's usual place.
    static let swiftExecutable: String? = {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/opt/swift/usr/bin"]
        return path.map { $0 + "/swift" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()
}
