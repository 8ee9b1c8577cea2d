// Test helper for the kill-safety test: logs in N chains, then exchanges each chain's
// head in a loop on N threads, writing `ACK <chain> <generation> <token>` to stdout after
// every exchange the store acknowledged. It never stops by itself: the test kills it.
// (It prints tokens by design: its only reader is the test that must verify them.)
import BatonCore
import BatonStorage
import BatonStore
import Glibc

/// The helper's work, outside main.swift's top level (which is MainActor-isolated).
enum ExchangeLoop {
    final class Lane: @unchecked Sendable {
        let store: TokenStore
        var bundle: TokenBundle
        init(_ store: TokenStore, _ bundle: TokenBundle) {
            self.store = store
            self.bundle = bundle
        }
    }

    static func writeLine(_ line: String, to fd: Int32 = 1) {
        let bytes = Array((line + "\n").utf8)  // one write(2) a line: lines never interleave
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    static func main(_ arguments: [String]) -> Int32 {
        guard arguments.count == 3, let chains = Int(arguments[2]), chains > 0 else {
            writeLine("usage: baton-exchange-loop DB CHAINS", to: 2)
            return 64
        }
        do {
            var policy = Policy()
            policy.maxChainsPerUser = 0
            let key = try KeyFile.load(at: KeyFile.defaultPath(forDatabase: arguments[1]), create: true)
            let store = try TokenStore(path: arguments[1], key: key, policy: policy)
            try store.createUser("loop", password: "loop-password")
            let bundles = try (0..<chains).map {
                try store.login(LoginRequest(username: "loop", password: "loop-password", deviceID: "loop-\($0)"))
            }
            var threads: [pthread_t] = []
            for bundle in bundles {
                var thread = pthread_t()
                pthread_create(&thread, nil, { raw in
                    ExchangeLoop.run(Unmanaged<Lane>.fromOpaque(raw!).takeRetainedValue())
                    return nil
                }, Unmanaged.passRetained(Lane(store, bundle)).toOpaque())
                threads.append(thread)
            }
            for thread in threads { pthread_join(thread, nil) }
            return 0
        } catch {
            writeLine("baton-exchange-loop: \(error)", to: 2)
            return 1
        }
    }

    static func run(_ lane: Lane) {
        while true {
            do {
                lane.bundle = try lane.store.exchange(lane.bundle.token)
                writeLine("ACK \(lane.bundle.chainID) \(lane.bundle.generation) \(lane.bundle.token)")
            } catch {
                writeLine("exchange failed: \(error)", to: 2)
                exit(1)
            }
        }
    }
}

exit(ExchangeLoop.main(CommandLine.arguments))
