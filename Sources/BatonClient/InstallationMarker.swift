import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the library keeps its record that this installation of the app has run, so that
/// `BatonSession.resetIfFirstLaunch()` can tell a reinstall (the app's container is new, the
/// Keychain kept the last installation's session) from an update or a relaunch (issue 42, F1).
public enum InstallationMarkerLocation: Sendable, Equatable {
    /// The process's own Application Support directory (`BatonClient/installation`); on Linux
    /// `$XDG_DATA_HOME/BatonClient` (`~/.local/share/BatonClient`). In an app extension, no
    /// marker (an extension's container is not the app's): the extension neither writes one
    /// nor judges, unless given `.appGroup`.
    case standard
    /// The App Group's container, shared by the app and its extensions
    /// (`Library/Application Support/BatonClient` in it).
    case appGroup(String)
    /// A directory of the app's choosing (tests; a custom layout).
    case directory(URL)
    /// No marker: `resetIfFirstLaunch()` decides nothing and never logs out.
    case none
}

/// The installation marker: one small file holding a random id, made by
/// `BatonSession.resetIfFirstLaunch()`, excluded from backups and readable after the first
/// unlock (`completeUntilFirstUserAuthentication`, set explicitly). Once it exists, every save
/// stamps the credentials with its id and location (`Stamp`, `StoredCredentials.installation`).
///
/// A reinstall is the one case where the store holds credentials stamped by this location and
/// the marker is missing: the container, marker included, went with the uninstall; the
/// Keychain did not. Every other case decides nothing: credentials without a stamp (written by
/// a release before the marker), a stamp of another location (a moved marker, another app), a
/// marker that cannot be read now (before the first unlock).
struct InstallationMarker: Sendable {
    /// What the marker says now.
    enum State: Equatable, Sendable {
        case missing
        case present(String)
        /// The file exists but cannot be read now (protected data before the first unlock, an
        /// I/O error): decide nothing.
        case unreadable
    }

    /// The marker's file; nil when there is none (`.none`, or an extension's `.standard`).
    let file: URL?
    /// Which marker this is, written into every stamp beside its id: `standard:<bundle id>`
    /// (a container is one app's), `group:<App Group>`, `dir:<path>`. A missing marker decides
    /// only about credentials that this same location stamped: a stamp from another location
    /// (the app moved its marker to an App Group; another app of the team shares the item)
    /// decides nothing (review of F1, H1 and H2).
    let location: String?

    static let fileName = "installation"

    /// The marker for `location` in this process (`isAppExtension`: the process is an `.appex`;
    /// `environment`: the process's, for `$XDG_DATA_HOME` on Linux).
    init(_ location: InstallationMarkerLocation, isAppExtension: Bool,
         environment: [String: String] = ProcessInfo.processInfo.environment) {
        let directory: URL?
        switch location {
        case .none: directory = nil
        case .directory(let url): directory = url
        case .appGroup(let group):
            #if canImport(Darwin)
            directory = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: group)?
                .appendingPathComponent("Library/Application Support/BatonClient", isDirectory: true)
            #else
            _ = group
            directory = Self.standardDirectory(environment: environment)
            #endif
        case .standard:
            directory = isAppExtension ? nil : Self.standardDirectory(environment: environment)
        }
        file = directory?.appendingPathComponent(Self.fileName, isDirectory: false)
        switch location {
        case .none: self.location = nil
        case .directory(let url): self.location = file == nil ? nil : "dir:" + url.standardizedFileURL.path
        case .appGroup(let group): self.location = file == nil ? nil : "group:" + group
        case .standard:
            let app = Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
            self.location = file == nil ? nil : "standard:" + app
        }
    }

    /// A stamp (`StoredCredentials.installation`): the marker's id and its location.
    struct Stamp: Equatable, Sendable {
        let id: String
        let location: String

        init(id: String, location: String) {
            self.id = id
            self.location = location
        }

        /// Parses `"<id> <location>"`; nil for anything else.
        init?(_ text: String?) {
            guard let text, let space = text.firstIndex(of: " ") else { return nil }
            id = String(text[..<space])
            location = String(text[text.index(after: space)...])
            guard InstallationMarker.isID(id), !location.isEmpty else { return nil }
        }

        var text: String { id + " " + location }
    }

    /// The stamp of this marker as it is now: nil when there is no marker (yet).
    func currentStamp() -> Stamp? {
        guard let location, case .present(let id) = read() else { return nil }
        return Stamp(id: id, location: location)
    }

    /// Application Support on Apple platforms; `$XDG_DATA_HOME` (else `~/.local/share`) elsewhere.
    static func standardDirectory(environment: [String: String]) -> URL? {
        #if canImport(Darwin)
        return FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first?
            .appendingPathComponent("BatonClient", isDirectory: true)
        #else
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return URL(fileURLWithPath: data, isDirectory: true).appendingPathComponent("BatonClient", isDirectory: true)
        }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".local/share/BatonClient", isDirectory: true)
        #endif
    }

    /// The marker's state now.
    func read() -> State {
        guard let file else { return .missing }
        guard FileManager.default.fileExists(atPath: file.path) else { return .missing }
        guard let data = try? Data(contentsOf: file), let id = String(data: data, encoding: .utf8)?
            .trimmingCharacters(in: .whitespacesAndNewlines), Self.isID(id) else { return .unreadable }
        return .present(id)
    }

    /// The marker's id, made now if missing; nil when there is no marker or it cannot be
    /// read or made (the credentials are then saved without a stamp, which decides nothing).
    func ensure() -> String? {
        guard let file else { return nil }
        switch read() {
        case .present(let id): return id
        case .unreadable: return nil
        case .missing: break
        }
        let id = UUID().uuidString
        let directory = file.deletingLastPathComponent()
        // Written whole to a file of its own, then linked into place: the marker is never seen
        // half-written (a crash mid-write would leave it unreadable, and so decide nothing for
        // good), and link() fails when another process linked its marker first.
        let temporary = directory.appendingPathComponent(".installation-" + id)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            try Data((id + "\n").utf8).write(to: temporary, options: [.withoutOverwriting, .completeFileProtectionUntilFirstUserAuthentication])
            #else
            try Data((id + "\n").utf8).write(to: temporary, options: [.withoutOverwriting])
            #endif
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            return nil
        }
        let linked = link(temporary.path, file.path) == 0
        try? FileManager.default.removeItem(at: temporary)
        guard linked else {
            // Another process made it first: its id is the one.
            if case .present(let other) = read() { return other }
            return nil
        }
        #if canImport(Darwin)
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        var url = file
        try? url.setResourceValues(values)
        #endif
        return id
    }

    /// A marker id is a UUID's text (36 characters of hex digits and dashes).
    static func isID(_ text: String) -> Bool {
        text.utf8.count == 36 && text.utf8.allSatisfy { $0 == UInt8(ascii: "-") || ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 70) || ($0 >= 97 && $0 <= 102) }
    }
}
