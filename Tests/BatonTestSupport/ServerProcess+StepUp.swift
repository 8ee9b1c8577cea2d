import BatonCore
import BatonStore

extension ServerProcess {
    /// Moves the chain's last authentication `seconds` into the past, as a login that long ago
    /// would have left it. Written from another process, as the admin CLI writes: verify reads
    /// the committed row, so the server sees it at once (no waiting minutes for max_age).
    package func ageAuthentication(ofChain chain: String, by seconds: Int64) throws {
        let connection = try Connection(path: databasePath)
        defer { connection.close() }
        try connection.statement("UPDATE chains SET auth_time = auth_time - ? WHERE id = ?")
            .execute([.int(seconds * 1000), .int(ChainID(hex: chain)!.rawValue)])
    }
}
