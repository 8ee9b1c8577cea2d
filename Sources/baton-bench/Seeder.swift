import BatonCore
import BatonStore

/// Fills a new database with one user and `count` live chains, inserted directly (logging in
/// 100,000 times would spend an hour in argon2id), and returns each chain's head token.
enum Seeder {
    static func seed(path: String, key: TokenKey, count: Int) throws -> [String] {
        let setup = try TokenStore(path: path, key: key)
        try setup.createUser("bench", password: "bench-password")
        setup.close()
        let codec = TokenCodec(key: key)
        let connection = try Connection(path: path)
        defer { connection.close() }
        let now = SystemClock().now()
        let expires = now + .seconds(7 * 86_400)  // long enough that no run sees an expiry
        var tokens: [String] = []
        tokens.reserveCapacity(count)
        try connection.transaction { () throws(SQLiteError) in
            let insert = try connection.statement("""
                INSERT INTO chains (id, user_id, device_id, device_class, created_at, head_generation, head_hash,
                                    head_issued_at, head_expires_at, auth_time)
                VALUES (?, 1, ?, 'mobile', ?, 0, ?, ?, ?, ?)
                """)
            for index in 0..<count {
                let issued = codec.issue(chainID: ChainID.random(), generation: 0)
                try insert.execute([
                    .int(issued.chainID.rawValue), .text("bench-\(index)"), .int(now.milliseconds), .blob(issued.hash.bytes),
                    .int(now.milliseconds), .int(expires.milliseconds), .int(now.milliseconds),
                ])
                tokens.append(issued.text)
            }
        }
        return tokens
    }
}
