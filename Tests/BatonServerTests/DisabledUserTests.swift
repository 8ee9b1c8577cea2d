import BatonCore
import Foundation
import Testing

/// Issue 17, finding 1: an account an operator disabled, re-passworded or revoked keeps no
/// working session, whatever the server's lifetimes, on both stores.
///
/// The admin CLI does not know the server's `--max-session` and `--exchange-window`; a chain
/// that is dead under the defaults may be alive for a server configured longer. Each test
/// makes such chains (a month-old chain with a fresh head; a head that expired 8 days ago)
/// by moving their timestamps back, then runs the real admin command against the live server.
@Suite(.serialized)
struct DisabledUserTests {
    static let day: Int64 = 86_400
    static let serverOptions = ["--max-session", "90d", "--exchange-window", "30d", "--max-chains-per-user", "0"]

    /// Two chains that only a server with the long lifetimes above still accepts: one created
    /// 31 days ago whose head is fresh (verify answers 200), one whose head expired 8 days
    /// ago (exchange answers 200).
    static func chainsOlderThanTheDefaults(_ server: ServerProcess, user: String) throws -> (month: String, expired: String) {
        let month = try server.login(user, device: "old-phone")
        try server.executeSQL("UPDATE chains SET created_at = created_at - \(31 * day * 1000), auth_time = auth_time - \(31 * day * 1000) WHERE id = \(ChainID(hex: month["chain_id"] as! String)!.rawValue)")
        let expired = try server.login(user, device: "old-tablet")
        try server.age(chain: expired["chain_id"] as! String, by: 8 * day)
        // Both still work for this server: the state the admin command must end.
        #expect(try server.request("GET", "/v1/verify", token: month["token"] as? String).status == 200)
        return (month["token"] as! String, expired["token"] as! String)
    }

    /// Both tokens are refused, for verify and for exchange, with `reason`.
    static func expectEnded(_ server: ServerProcess, _ tokens: (month: String, expired: String), reason: String) throws {
        for (name, token) in [("month-old chain", tokens.month), ("expired head", tokens.expired)] {
            let exchange = try server.request("POST", "/v1/exchange", token: token)
            #expect(exchange.status == 401 && exchange.error == "chain_revoked" && exchange.json["reason"] as? String == reason, "\(name): \(exchange.status) \(exchange.text)")
            let verify = try server.request("GET", "/v1/verify", token: token)
            #expect(verify.error == "chain_revoked" && verify.json["reason"] as? String == reason, "\(name): \(verify.status) \(verify.text)")
        }
    }

    /// The three user-wide admin commands, each with what it prints and the reason it records.
    enum UserWideCommand: String, CaseIterable, CustomStringConvertible, Sendable {
        case disable, passwd, revokeUser
        var description: String { rawValue }

        /// Runs the command on `server`'s database; returns its exit status, output and error.
        func run(on server: ServerProcess) throws -> (Int32, String, String) {
            let db = ["--db", server.databasePath]
            switch self {
            case .disable: return try runBaton(["admin", "user", "disable", "carol"] + db)
            case .passwd: return try runBaton(["admin", "user", "passwd", "carol", "--password-stdin"] + db, stdin: "a new long password\n")
            case .revokeUser: return try runBaton(["admin", "revoke", "--user", "carol"] + db)
            }
        }

        /// The first line it prints when it revoked both chains.
        var expectedOutput: String {
            switch self {
            case .disable: "Disabled 'carol'; revoked 2 chains.\n"
            case .passwd: "Changed the password of 'carol'; revoked 2 chains.\n"
            case .revokeUser: "Revoked 2 chains of 'carol': "
            }
        }

        var reason: String {
            switch self {
            case .disable: "user_disabled"
            case .passwd: "password_changed"
            case .revokeUser: "admin"
            }
        }
    }

    /// `user disable`, `user passwd` and `revoke --user` end chains that only a server
    /// configured longer than the admin CLI's defaults still accepts (before the fix: "revoked
    /// 0 chains", then verify and exchange answered 200).
    @Test(arguments: StoreBackend.allCases, UserWideCommand.allCases)
    func userWideCommandsEndChainsThatOnlyALongerConfiguredServerAccepts(_ backend: StoreBackend, _ command: UserWideCommand) async throws {
        let server = try await ServerProcess.start(on: backend, Self.serverOptions)
        try await offPool { () throws in
            defer { server.stop() }
            try server.addUser("carol")
            let tokens = try Self.chainsOlderThanTheDefaults(server, user: "carol")
            let (status, out, err) = try command.run(on: server)
            #expect(status == 0 && err.isEmpty && out.hasPrefix(command.expectedOutput), "\(command): \(out)\(err)")
            try Self.expectEnded(server, tokens, reason: command.reason)
        }
    }

    /// Defence in depth: a chain whose user is disabled is refused by every operation even
    /// when its row was never revoked (an account disabled by a restore, a replica's lag, or
    /// a row written by hand), and the refusal names `user_disabled`.
    @Test(arguments: StoreBackend.allCases)
    func everyOperationRefusesAChainWhoseUserIsDisabled(_ backend: StoreBackend) async throws {
        let server = try await ServerProcess.start(on: backend, Self.serverOptions)
        try await offPool { () throws in
            defer { server.stop() }
            try server.addUser("carol")
            let tokens = try (0..<5).map { try server.login("carol", device: "d\($0)")["token"] as! String }
            try server.executeSQL("UPDATE users SET disabled_at = 1 WHERE username = 'carol'")
            let calls: [(String, String, String?)] = [
                ("GET", "/v1/verify", nil),
                ("POST", "/v1/exchange", nil),
                ("POST", "/v1/logout", nil),
                ("POST", "/v1/confirm", #"{"password":"correct horse battery"}"#),
                ("POST", "/v1/password", #"{"current_password":"correct horse battery","new_password":"another long password"}"#),
            ]
            for ((method, path, body), token) in zip(calls, tokens) {
                let answer = try server.request(method, path, token: token, json: body)
                #expect(answer.status == 401 && answer.error == "chain_revoked" && answer.json["reason"] as? String == "user_disabled",
                        "\(method) \(path): \(answer.status) \(answer.text)")
            }
            // The refused password change changed nothing: the old password still checks out.
            try server.executeSQL("UPDATE users SET disabled_at = NULL WHERE username = 'carol'")
            #expect(try server.request("POST", "/v1/login", json: #"{"username":"carol","password":"correct horse battery","device_id":"x"}"#).status == 200)
        }
    }
}
