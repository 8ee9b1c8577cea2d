// A client process for the two-process test: a BatonSession on a shared file store that
// restores, says "ready", waits for "go" on standard input (so that two probes start their
// requests at the same moment), sends requests, and reports one line per step.
//
// Usage: baton-client-probe <base-url> <store-path> <path> <requests> [<clock-offset-seconds> [<interval-ms> [<exchange-timeout-s>]]]
// The offset moves the probe's clock forward, so that a test can make both probes see their
// stored token expired at once without waiting for a real expiry. With an interval the probe
// waits that long between requests, and stops early when "stop" arrives on standard input
// (a client that keeps using its session while the test does something else). The exchange
// timeout is `BatonConfiguration.exchangeTimeout` (2 s by default).
//
//        baton-client-probe --device-key <store-path>
// Says "ready", waits for "go", then loads the store's device key, making it if missing (two
// probes started together race to make it), and prints "key <thumbprint>".
import BatonClient
import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let arguments = CommandLine.arguments
if arguments.count == 3, arguments[1] == "--device-key" {
    FileHandle.standardOutput.write(Data("ready\n".utf8))
    guard readLine() == "go" else { exit(65) }
    var lines = "exit 1\n"
    do {
        if let key = try FileCredentialStore(path: arguments[2]).deviceKey(creating: true) { lines = "key \(key.thumbprint)\nexit 0\n" }
    } catch {
        lines = "failed \(error)\nexit 1\n"
    }
    FileHandle.standardOutput.write(Data(lines.utf8))
    exit(0)
}
guard (5...8).contains(arguments.count), let baseURL = URL(string: arguments[1]), let count = Int(arguments[4]),
      let offset = TimeInterval(arguments.count >= 6 ? arguments[5] : "0"),
      let interval = Int(arguments.count >= 7 ? arguments[6] : "0"),
      let exchangeTimeout = Double(arguments.count == 8 ? arguments[7] : "2"), exchangeTimeout > 0 else {
    FileHandle.standardError.write(Data("Usage: baton-client-probe <base-url> <store-path> <path> <requests> [<clock-offset-seconds> [<interval-ms> [<exchange-timeout-s>]]]\n".utf8))
    exit(64)
}
/// Set when "stop" arrives on standard input (with an interval only).
let stopRequested = Atomic<Bool>(false)

/// Prints one line of the probe's report at once (unbuffered).
func report(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let session = BatonSession(configuration: BatonConfiguration(baseURL: baseURL, appName: "BatonProbe/1", expiryMargin: 0,
                                                             exchangeTimeout: .milliseconds(Int(exchangeTimeout * 1000)),
                                                             now: { Date().addingTimeInterval(offset) }),
                           store: FileCredentialStore(path: arguments[2]))
let status = await session.restore()
report("ready \(status)")
guard readLine() == "go" else { exit(65) }
if interval > 0 {
    Thread {
        while let line = readLine(), line != "stop" {}
        stopRequested.store(true, ordering: .relaxed)
    }.start()
}
var failures = 0
for _ in 0..<count {
    if stopRequested.load(ordering: .relaxed) { break }
    if interval > 0 { try? await Task.sleep(for: .milliseconds(interval)) }
    do {
        let (_, response) = try await session.send(URLRequest(url: URL(string: arguments[3], relativeTo: baseURL)!))
        report("ok \(response.statusCode)")
    } catch {
        report("failed \(error)")
        failures += 1
    }
}
report("done \(await session.status)")
// The status is printed too: a test can read it from the output alone.
let exitStatus: Int32 = failures == 0 ? 0 : 1
report("exit \(exitStatus)")
exit(exitStatus)
