import BatonTestSupport
import Foundation
import Testing

/// What Apple's tools need from the manifest (issue 18, defect 3). No Apple toolchain runs here,
/// so these read the manifest as text; docs/client.md says what was compiled where.
struct PackageManifestTests {
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
}
