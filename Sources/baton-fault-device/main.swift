// One simulated device of the false-logout benchmark (baton-fault-bench): a real BatonSession
// on a file store that logs in (or restores what a killed predecessor stored), then sends the
// app's requests (GET /v1/verify, as a gateway would) every interval until SIGTERM, letting the
// session exchange its token as it expires. One line per fact on standard output:
//   ready | chain <chain-id> <generation> | fail <why> | logout <chain-id> <reason> | persisting <chain-id> <generation>
// A logout ends the process (status 3): the benchmark records it and starts a new login.
//
// Usage: baton-fault-device <base-url> <store-path> <username> <password> login|restore
//          [--interval-ms N] [--clock-offset S] [--clock-jump-after S --clock-jump S] [--announce-saves] [--unbound]
// --unbound logs in without binding the chain to the device key (Bearer tokens).
import BatonClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Prints one line of the device's report at once (unbuffered).
func report(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func usage() -> Never {
    FileHandle.standardError.write(Data("""
        Usage: baton-fault-device <base-url> <store-path> <username> <password> login|restore
                 [--interval-ms N] [--clock-offset S] [--clock-jump-after S --clock-jump S] [--announce-saves] [--unbound]

        """.utf8))
    exit(64)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 5, let baseURL = URL(string: arguments[0]), ["login", "restore"].contains(arguments[4]) else { usage() }
let (storePath, username, password, mode) = (arguments[1], arguments[2], arguments[3], arguments[4])
var interval = 250, offset: TimeInterval = 0, jumpAfter: TimeInterval?, jump: TimeInterval = 0, announce = false, bound = true
var rest = arguments.dropFirst(5)[...]
while let option = rest.popFirst() {
    switch option {
    case "--announce-saves": announce = true
    case "--unbound": bound = false
    case "--interval-ms": guard let value = rest.popFirst().flatMap(Int.init) else { usage() }; interval = value
    case "--clock-offset": guard let value = rest.popFirst().flatMap(TimeInterval.init) else { usage() }; offset = value
    case "--clock-jump-after": guard let value = rest.popFirst().flatMap(TimeInterval.init) else { usage() }; jumpAfter = value
    case "--clock-jump": guard let value = rest.popFirst().flatMap(TimeInterval.init) else { usage() }; jump = value
    default: usage()
    }
}

let clock = DeviceClock(offset: offset, jumpAfter: jumpAfter, jump: jump)
let store = AnnouncingStore(path: storePath)
var configuration = BatonConfiguration(baseURL: baseURL, appName: "FaultBench/1", now: { clock.now() })
configuration.deviceBinding = bound ? .on : .off
let session = BatonSession(configuration: configuration, store: store)

/// A short, stable name for why a request failed (the benchmark counts them).
func why(_ error: Error) -> String {
    guard let error = error as? BatonClientError else { return "\(type(of: error))" }
    if case .transport(let code, _) = error { return "transport(\(code))" }
    if case .http(let status, let serverError, _, _) = error { return "http(\(status) \(serverError?.code ?? "-"))" }
    return String("\(error)".prefix(80))
}

/// A session's end in one word: `tokenReused`, `revoked(fork_detected)`, ...
func reasonText(_ reason: Any) -> String {
    "\(reason)".replacing(/BatonClient\.\w+\(rawValue: "([^"]*)"\)/) { $0.output.1 }.replacing(" ", with: "")
}

/// Logs in, trying again while the network is away or the server busy (the user taps "log
/// in" again), a second more each time up to 5.
func logIn() async {
    var attempt = 0
    while true {
        do {
            try await session.login(username: username, password: password)
            return
        } catch {
            report("fail login \(why(error))")
            attempt += 1
            try? await Task.sleep(for: .seconds(min(attempt, 5)))
        }
    }
}

if mode == "login" {
    await logIn()
} else if case .loggedOut = await session.restore() {
    await logIn()  // killed before anything was stored: nothing to restore
}
if announce { store.arm() }
var last: (chain: String, generation: Int)?
if case .loggedIn(let chain, let generation) = await session.status {
    last = (chain, generation)
    report("chain \(chain) \(generation)")
}
report("ready")
let request = URLRequest(url: URL(string: "/v1/verify", relativeTo: baseURL)!)
while true {
    do {
        _ = try await session.send(request)
    } catch BatonClientError.loginRequired(let reason) {
        report("logout \(last?.chain ?? "-") \(reasonText(reason))")
        exit(3)
    } catch {
        report("fail \(why(error))")
    }
    let status = await session.status
    if case .loggedIn(let chain, let generation) = status {
        if last?.chain != chain || last?.generation != generation { report("chain \(chain) \(generation)") }
        last = (chain, generation)
    } else if case .loggedOut(let reason) = status {
        report("logout \(last?.chain ?? "-") \(reasonText(reason))")
        exit(3)
    }  // else the store is unreadable for now: not a logout, the session reads it again
    try? await Task.sleep(for: .milliseconds(interval))
}
