import Foundation

/// Debian's PostgreSQL server binaries: /usr/lib/postgresql/<version>/bin, the newest installed
/// version that has initdb, postgres and pg_ctl (Debian keeps them off PATH; /usr/bin holds
/// only the client wrappers).
package struct PostgresBinaries: Sendable {
    package let directory: String
    package let version: Int

    /// The newest installed version, or `serverBinariesMissing`.
    package static func find(under root: String = "/usr/lib/postgresql") throws(PostgresClusterError) -> PostgresBinaries {
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted(by: >)
        for version in versions {
            let directory = "\(root)/\(version)/bin"
            let needed = ["initdb", "postgres", "pg_ctl", "pg_basebackup", "pg_isready", "psql"]
            if needed.allSatisfy({ FileManager.default.isExecutableFile(atPath: "\(directory)/\($0)") }) {
                return PostgresBinaries(directory: directory, version: version)
            }
        }
        throw .serverBinariesMissing
    }

    /// The path of the program `name` (initdb, pg_ctl, psql ...).
    package func path(_ name: String) -> String { "\(directory)/\(name)" }

    /// Runs `sql` with psql against the libpq connection URI `uri` (as one query string,
    /// `ON_ERROR_STOP`) and returns the unaligned, tuples-only output without its last newline.
    /// Blocking.
    /// - Throws: `commandFailed` with psql's error when the connection or the statement fails.
    @discardableResult
    package func psql(_ sql: String, uri: String) throws -> String {
        let result = try runCommand(path("psql"), ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", uri, "-c", sql],
                                    environment: ["PGCONNECT_TIMEOUT": "10"])
        guard result.status == 0 else { throw PostgresClusterError.commandFailed(command: "psql -c \(sql)", status: result.status, output: result.stderr) }
        return result.stdout.hasSuffix("\n") ? String(result.stdout.dropLast()) : result.stdout
    }
}
