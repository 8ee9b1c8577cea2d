// One simulated device of the false-logout benchmark (baton-fault-bench): a real BatonSession
// on a file store that logs in (or restores what a killed predecessor stored), then sends the
// app's requests (GET /v1/verify, as a gateway would) every interval until SIGTERM, letting the
// session exchange its token as it expires. One line per fact on standard output:
//   ready | chain <chain-id> <generation> | fail <why> | logout <chain-id> <reason> | persisting <chain-id> <generation>
// A logout ends the process (status 3): the benchmark records it and starts a new login. Any
// other end but its signals is a crash to the benchmark, which restarts it in restore mode.
// Restoring, a stored chain the session will not take up is a logout (`logout <chain> ...`),
// never a silent new login; a login only follows when nothing was stored.
//
// Usage: baton-fault-device <base-url> <store-path> <username> <password> login|restore
//          [--interval-ms N] [--clock-offset S] [--clock-jump-after S --clock-jump S] [--clock-file PATH]
//          [--idle-after-failure S] [--announce-saves] [--unbound] [--no-login]
// --unbound logs in without binding the chain to the device key (Bearer tokens).
// --clock-file moves the process's wall clock (CLOCK_REALTIME, Foundation's Date()) by the offset
// in seconds the file holds, followed as it changes (WallClock.swift).
// --idle-after-failure sends nothing for S seconds after a request failed (the app idle).
// --no-login never logs in (a thief with a copy of the store: it has no password).
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
                 [--interval-ms N] [--clock-offset S] [--clock-jump-after S --clock-jump S] [--clock-file PATH]
                 [--idle-after-failure S] [--announce-saves] [--unbound] [--no-login]

        """.utf8))
    exit(64)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 5, let baseURL = URL(string: arguments[0]), ["login", "restore"].contains(arguments[4]) else { usage() }
let (storePath, username, password, mode) = (arguments[1], arguments[2], arguments[3], arguments[4])
var interval = 250, offset: TimeInterval = 0, jumpAfter: TimeInterval?, jump: TimeInterval = 0, announce = false, bound = true
var clockFile: String?, idleAfterFailure: TimeInterval?, neverLogIn = false
var rest = arguments.dropFirst(5)[...]
while let option = rest.popFirst() {
    switch option {
    case "--announce-saves": announce = true
    case "--unbound": bound = false
    case "--no-login": neverLogIn = true
    case "--clock-file": guard let value = rest.popFirst() else { usage() }; clockFile = value
    case "--idle-after-failure": guard let value = rest.popFirst().flatMap(TimeInterval.init) else { usage() }; idleAfterFailure = value
    case "--interval-ms": guard let value = rest.popFirst().flatMap(Int.init) else { usage() }; interval = value
    case "--clock-offset": guard let value = rest.popFirst().flatMap(TimeInterval.init) else { usage() }; offset = value
    case "--clock-jump-after": guard let value = rest.popFirst().flatMap(TimeInterval.init) else { usage() }; jumpAfter = value
    case "--clock-jump": guard let value = rest.popFirst().flatMap(TimeInterval.init) else { usage() }; jump = value
    default: usage()
    }
}

let mayLogIn = !neverLogIn
if let clockFile { WallClock.follow(clockFile) }
let clock = DeviceClock(offset: offset, jumpAfter: jumpAfter, jump: jump)
let store = AnnouncingStore(path: storePath)
var configuration = BatonConfiguration(baseURL: baseURL, appName: "FaultBench/1", now: { clock.now() })
configuration.deviceBinding = bound ? .on : .off
configuration.installationMarker = .none  // a hundred devices on one machine: no marker in $HOME
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

/// Ends the process as a logout of `chain` (the benchmark records it).
func loggedOut(_ chain: String?, _ reason: Any) -> Never {
    report("logout \(chain ?? "-") \(reasonText(reason))")
    exit(3)
}

/// Logs in, trying again while the network is away or the server busy (the user taps "log
/// in" again), a second more each time up to 5.
func logIn() async {
    guard mayLogIn else { loggedOut(nil, "nothing-to-restore") }
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
} else {
    // What a crashed or killed predecessor left: restored, or its end reported as a logout.
    let stored = (try? store.load())?.bundle
    if case .loggedOut(let reason) = await session.restore() {
        if let stored { loggedOut(stored.chainID, reason) }
        await logIn()  // killed before anything was stored: nothing to restore
    }
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
        loggedOut(last?.chain, reason)
    } catch {
        report("fail \(why(error))")
        if let idleAfterFailure { try? await Task.sleep(for: .seconds(idleAfterFailure)) }
    }
    let status = await session.status
    if case .loggedIn(let chain, let generation) = status {
        if last?.chain != chain || last?.generation != generation { report("chain \(chain) \(generation)") }
        last = (chain, generation)
    } else if case .loggedOut(let reason) = status {
        loggedOut(last?.chain, reason)
    }  // else the store is unreadable for now: not a logout, the session reads it again
    try? await Task.sleep(for: .milliseconds(interval))
}
