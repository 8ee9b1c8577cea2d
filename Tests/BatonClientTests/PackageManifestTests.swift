import BatonTestSupport
import Foundation
import Testing

/// What Apple's tools need from the manifest (issue 18, defect 3). No Apple toolchain runs here,
/// so these read the manifest as text; docs/client.md says what was compiled where.
@Suite(.ownThreads) struct PackageManifestTests {
    static func manifest() throws -> String {
        try String(contentsOfFile: repositoryRoot + "/Package.swift", encoding: .utf8)
    }

    @Test func manifestDeclaresTheApplePlatformsTheClientNeeds() throws {
        let text = try Self.manifest()
        // Duration and Task.sleep(for:) set the floor.
        #expect(text.contains(".iOS(.v16)") && text.contains(".macOS(.v13)"))
    }

    @Test func manifestHasNoSideEffects() throws {
        // Xcode evaluates manifests in a sandbox: no files written, nothing but PackageDescription.
        let text = try Self.manifest()
        let imports = text.split(separator: "\n").filter { $0.hasPrefix("import ") }
        #expect(imports == ["import PackageDescription"])
        #expect(!text.contains("FileManager") && !text.contains(".write("))
    }

    /// The manifest as a Mac evaluates it: only the client library, with its privacy manifest.
    /// The `#if os(Linux)` branches are turned off in a copy, which `swift package
    /// dump-package` evaluates beside the client's sources alone (no server source present,
    /// so a target that leaked out of the Linux branch would fail to resolve).
    @Test func appleEvaluationSeesOnlyTheClientLibrary() throws {
        let text = try Self.manifest()
        #expect(text.contains("#if os(Linux)"))
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("baton-manifest-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root.appendingPathComponent("Sources"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("Sources/BatonClient").path,
                                                   withDestinationPath: repositoryRoot + "/Sources/BatonClient")
        try text.replacingOccurrences(of: "#if os(Linux)", with: "#if false")
            .write(to: root.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        let swift = try #require(Self.executableOnPath("swift"))
        let dump = try runCommand(swift, ["package", "--package-path", root.path, "--scratch-path", root.appendingPathComponent(".build").path, "dump-package"])
        #expect(dump.status == 0, "\(dump.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        let products = (json["products"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        let targets = (json["targets"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(products == ["BatonClient"])
        #expect(targets == ["BatonClient"])
        let client = (json["targets"] as? [[String: Any]])?.first
        let resources = (client?["resources"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String }
        #expect(resources == ["PrivacyInfo.xcprivacy"])
        #expect((client?["dependencies"] as? [Any])?.isEmpty ?? true)
    }

    /// The privacy manifest is a property list declaring no tracking and a reason for every
    /// required-reason API the client calls (boot time for the claim's lease; UserDefaults no
    /// longer: the first-launch check reads a marker file of its own, issue 42 F1).
    @Test func privacyManifestDeclaresEveryRequiredReasonAPI() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: repositoryRoot + "/Sources/BatonClient/PrivacyInfo.xcprivacy"))
        let plist = try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        #expect(plist["NSPrivacyTracking"] as? Bool == false)
        let apis = plist["NSPrivacyAccessedAPITypes"] as? [[String: Any]] ?? []
        #expect(apis.map { $0["NSPrivacyAccessedAPIType"] as? String } == ["NSPrivacyAccessedAPICategorySystemBootTime"])
        #expect(apis.last?["NSPrivacyAccessedAPITypeReasons"] as? [String] == ["35F9.1"])
        // The sources call no other required-reason API (file timestamps, disk space, keyboards);
        // the boot-relative clock is read in DeviceUptime.swift only.
        let sources = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot + "/Sources/BatonClient").filter { $0.hasSuffix(".swift") }
        for name in sources {
            let source = try String(contentsOfFile: repositoryRoot + "/Sources/BatonClient/" + name, encoding: .utf8)
            for api in ["modificationDate", "creationDate", "volumeAvailableCapacity", "activeInputModes", "UserDefaults("] {
                #expect(!source.contains(api), "\(name) calls \(api): declare its reason in PrivacyInfo.xcprivacy")
            }
            for api in ["systemUptime", "mach_absolute_time", "CLOCK_MONOTONIC", "CLOCK_BOOTTIME"] where name != "DeviceUptime.swift" {
                #expect(!source.contains(api), "\(name) calls \(api): declare its reason in PrivacyInfo.xcprivacy")
            }
        }
    }

    static func executableOnPath(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
