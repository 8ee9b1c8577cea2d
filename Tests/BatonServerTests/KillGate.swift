import BatonTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

/// The SIGKILL loop the crash tests share: client threads send their requests through this
/// gate while the test kills the server at random moments and restarts it on the same
/// database. The gate holds new requests while the server is down and counts those in flight,
/// so the test knows every client has seen the kill before it looks at the database.
final class KillGate: Sendable {
    private struct State {
        var port: UInt16
        var paused = false
        var stopping = false
        var inRequest = 0
    }

    private let state: Mutex<State>

    init(port: UInt16) { state = Mutex(State(port: port)) }

    /// The run's number of kills (`<prefix>_KILLS`, else `defaultKills`) and seed
    /// (`<prefix>_SEED` replays a run's timing, else a fresh one), printed under `label`.
    static func plan(_ prefix: String, defaultKills: Int, label: String) -> (kills: Int, seed: UInt64) {
        let kills = environmentInt(prefix + "_KILLS", default: defaultKills)
        let seed = SeededRandom.seed(from: prefix + "_SEED")
        print("\(label): seed \(seed) (\(prefix)_SEED=\(seed) replays the kill timing), \(kills) kills")
        return (kills, seed)
    }

    /// Starts `count` client threads, client `n` with a generator seeded from `seed` and `n`;
    /// the group is left when each returns.
    func startClients(_ count: Int, seed: UInt64, _ client: @escaping @Sendable (Int, inout SeededRandom) -> Void) -> DispatchGroup {
        let finished = DispatchGroup()
        for number in 0..<count {
            finished.enter()
            let clientSeed = seed &+ UInt64(number) &* 7919
            Thread {
                var random = SeededRandom(seed: clientSeed)
                client(number, &random)
                finished.leave()
            }.start()
        }
        return finished
    }

    /// The port for the client's next request, which counts as in flight until `leave`; nil
    /// once the test stops the clients. Waits while the server is down.
    func enter() -> UInt16? {
        while true {
            let port = state.withLock { state -> UInt16?? in
                if state.stopping { return .some(nil) }
                if state.paused { return nil }
                state.inRequest += 1
                return state.port
            }
            if let port { return port }
            usleep(5_000)  // paused while the test kills and restarts the server
        }
    }

    /// The request `enter` allowed is over.
    func leave() { state.withLock { $0.inRequest -= 1 } }

    /// Once `progress` has grown (traffic is flowing), at a random moment: holds new requests,
    /// kills the newest server with SIGKILL, waits for the requests it cut, hands it to
    /// `check`, restarts it on the same database (appended to `servers`) and lets the clients
    /// in again.
    func killAndRestart(_ servers: inout [ServerProcess], kill: Int, random: inout SeededRandom, progress: () -> Int,
                        check: (ServerProcess) throws -> Void) throws {
        let before = progress()
        _ = eventually(within: 10) { progress() > before }
        usleep(UInt32.random(in: 50_000...400_000, using: &random))
        let server = servers.last!
        state.withLock { $0.paused = true }  // no new requests; those in flight are cut
        server.process.send(SIGKILL)
        server.process.waitUntilExit()
        #expect(eventually(within: 20) { state.withLock { $0.inRequest } == 0 }, "a client hung after kill \(kill)")
        try check(server)
        let restarted = try server.restarted()
        servers.append(restarted)
        state.withLock {
            $0.port = restarted.port
            $0.paused = false
        }
    }

    /// Tells the clients to stop and waits for them.
    func stop(_ clients: DispatchGroup) {
        state.withLock { $0.stopping = true }
        clients.wait()
    }
}
