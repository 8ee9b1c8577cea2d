@testable import BatonStore
import Foundation
import Testing

/// The key file beside a SQLite database (`<db>.key`): file mechanics, no store operation, so
/// one backend (a PostgreSQL server takes --key-file; BatonServerTests' KeyFileCheckTests).
struct KeyFileTests {
    @Test func keyFileIsCreatedOwnerOnlyAndReloadsTheSameKey() throws {
        let db = try TemporaryDatabase()
        let path = KeyFile.defaultPath(forDatabase: db.path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let first = try KeyFile.load(at: path, create: true)
        let second = try KeyFile.load(at: path, create: false)
        #expect(first.bytes == second.bytes)
    }

    @Test func keyFileReadableByOthersIsRefused() throws {
        let db = try TemporaryDatabase()
        let path = KeyFile.defaultPath(forDatabase: db.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        #expect(throws: StoreError.self) { _ = try KeyFile.load(at: path, create: true) }
    }

    @Test func malformedOrMissingKeyFileIsRefused() throws {
        let db = try TemporaryDatabase()
        let path = db.directory + "/bad.key"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("xyz\n".utf8), attributes: [.posixPermissions: 0o600]))
        #expect(throws: StoreError.keyFile("key file \(path) is malformed (expected 64 hex digits)")) { _ = try KeyFile.load(at: path, create: true) }
        #expect(throws: StoreError.self) { _ = try KeyFile.load(at: db.directory + "/none.key", create: false) }
    }
}
