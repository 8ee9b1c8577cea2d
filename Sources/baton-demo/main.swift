// baton-demo: logs in through a Baton gateway and calls an app endpoint with BatonClient,
// printing each step. The password is read from standard input (never from the command line).
//
//   echo 'correct horse battery' | baton-demo --gateway http://127.0.0.1:8443 --user alice \
//       --path /api/orders --calls 3 --interval 2
//   baton-demo --gateway http://127.0.0.1:8443 --user alice --logout    # ends the stored session
//
// ./scripts/demo builds it and runs it through a throwaway server, nginx and backend.
import BatonClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let usage = """
    Usage: baton-demo --gateway <url> --user <name> [--path <path>] [--store <file>] [--calls <n>] [--interval <seconds>] [--logout]
    Reads the password from standard input when a login is needed. Calls --path (default
    /api/hello) --calls times (default 1; with --logout 0: only the logout), then logs out
    with --logout.
    """

/// Prints an error and the usage to stderr and exits (64: usage, 1: failure).
func fail(_ message: String, code: Int32 = 64) -> Never {
    FileHandle.standardError.write(Data("Error: \(message)\n\(usage)\n".utf8))
    exit(code)
}

/// Prints one step of the demo.
func step(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))  // unbuffered: each step shows at once
}

var options: [String: String] = [:]
var flags: Set<String> = []
var remaining = CommandLine.arguments.dropFirst()
while let argument = remaining.popFirst() {
    switch argument {
    case "--gateway", "--user", "--path", "--store", "--calls", "--interval":
        guard let value = remaining.popFirst() else { fail("\(argument) needs a value") }
        options[argument] = value
    case "--logout": flags.insert(argument)
    case "-h", "--help":
        print(usage)
        exit(0)
    default: fail("unknown option '\(argument)'")
    }
}
guard let gatewayText = options["--gateway"], let gateway = URL(string: gatewayText), gateway.scheme != nil else {
    fail("--gateway needs a URL such as http://127.0.0.1:8443")
}
guard let user = options["--user"] else { fail("--user is required") }
let path = options["--path"] ?? "/api/hello"
let storePath = options["--store"] ?? FileManager.default.currentDirectoryPath + "/baton-demo-credentials.json"
// --logout alone ends the session without calling the endpoint first.
let defaultCalls = flags.contains("--logout") ? "0" : "1"
guard let calls = Int(options["--calls"] ?? defaultCalls), calls >= 0 else { fail("--calls needs a whole number, 0 or more") }
guard let interval = Double(options["--interval"] ?? "0"), interval >= 0 else { fail("--interval needs seconds, e.g. 2") }

let session = BatonSession(configuration: BatonConfiguration(baseURL: gateway, appName: "BatonDemo/1.0"),
                           store: FileCredentialStore(path: storePath))
let listener = Task {
    for await event in session.events {
        switch event {
        case .loggedIn: step("  event: logged in")
        case .refreshed(let generation): step("  event: token exchanged for its successor (generation \(generation))")
        case .loginRequired(let reason): step("  event: log in again: \(reason.defaultMessage)")
        case .loggedOut: step("  event: logged out")
        }
    }
}

step("1. Restoring the session from \(storePath)")
switch await session.restore() {
case .loggedIn(let chain, let generation):
    step("   stored session found: chain \(chain), generation \(generation)")
case .credentialsUnavailable:
    fail("the credentials in \(storePath) cannot be read now (permission, I/O); not logged out, try again", code: 1)
case .loggedOut(let reason):
    step("   no session (\(reason.defaultMessage)); logging in as \(user) through \(gateway.absoluteString)")
    guard let password = readLine(strippingNewline: true), !password.isEmpty else { fail("no password on standard input") }
    do {
        try await session.login(username: user, password: password, deviceClass: .desktop, deviceName: "baton-demo")
    } catch BatonClientError.http(let status, let error, _, _) {
        fail("login failed: \(status) \(error?.code ?? "") \(error?.description ?? "")", code: 1)
    } catch {
        fail("login failed: \(error)", code: 1)
    }
    if case .loggedIn(let chain, let generation) = await session.status { step("   logged in: chain \(chain), generation \(generation)") }
}

var failed = false
for call in stride(from: 1, through: calls, by: 1) {
    if call > 1 && interval > 0 { try? await Task.sleep(for: .milliseconds(Int(interval * 1000))) }
    step("2. GET \(path) (call \(call) of \(calls))")
    do {
        let (data, response) = try await session.send(URLRequest(url: URL(string: path, relativeTo: gateway)!))
        step("   \(response.statusCode): \(String(decoding: data, as: UTF8.self))")
        if case .loggedIn(_, let generation) = await session.status { step("   token generation now \(generation)") }
    } catch BatonClientError.loginRequired(let reason) {
        step("   log in again: \(reason.defaultMessage)")
        failed = true
        break
    } catch {
        step("   failed: \(error)")
        failed = true
    }
}

if flags.contains("--logout") {
    step("\(calls > 0 ? 3 : 2). Logging out")
    step(await session.logout() ? "   the server revoked the session" : "   logged out locally (the server was not reached)")
}
listener.cancel()
exit(failed ? 1 : 0)
