// A client process for the two-process test: a BatonSession on a shared file store that
// restores, says "ready", waits for "go" on standard input (so that two probes start their
// requests at the same moment), sends requests, and reports one line per step.
//
// Usage: baton-client-probe <base-url> <store-path> <path> <requests>
import BatonClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let arguments = CommandLine.arguments
guard arguments.count == 5, let baseURL = URL(string: arguments[1]), let count = Int(arguments[4]) else {
    FileHandle.standardError.write(Data("Usage: baton-client-probe <base-url> <store-path> <path> <requests>\n".utf8))
    exit(64)
}

/// Prints one line of the probe's report at once (unbuffered).
func report(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let session = BatonSession(configuration: BatonConfiguration(baseURL: baseURL, appName: "BatonProbe/1", expiryMargin: 0),
                           store: FileCredentialStore(path: arguments[2]))
let status = await session.restore()
report("ready \(status)")
guard readLine() == "go" else { exit(65) }
var failures = 0
for _ in 0..<count {
    do {
        let (_, response) = try await session.send(URLRequest(url: URL(string: arguments[3], relativeTo: baseURL)!))
        report("ok \(response.statusCode)")
    } catch {
        report("failed \(error)")
        failures += 1
    }
}
report("done \(await session.status)")
exit(failures == 0 ? 0 : 1)
