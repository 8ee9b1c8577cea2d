// The false-logout benchmark (issue 18): many simulated devices, each a real BatonClient in a
// process of its own (`baton-fault-device`), against a real `baton serve` with the DEFAULT
// retry grace and scaled-down token lifetimes, each behind a fault-injecting relay. Counts,
// per fault kind: logouts nobody caused by stealing (target 0 outside the by-design row),
// thefts detected (target all), device processes crashed (target 0), exchange requests per
// token lifetime, requests failed to the app. Prints the table, then a `verdict:` line; exits 2 when a target is missed.
//
// Run it on a release build: scripts/bench-false-logout.
import Foundation
import Glibc

signal(SIGPIPE, SIG_IGN)  // a device that died with its pipe open must not kill the benchmark

if CommandLine.arguments.contains("--help") || CommandLine.arguments.contains("-h") {
    print(BenchOptions.usage)
    exit(0)
}
let options: BenchOptions
do { options = try BenchOptions.parse(Array(CommandLine.arguments.dropFirst())) } catch {
    FileHandle.standardError.write(Data("Error: \(error)\n\(BenchOptions.usage)\n".utf8))
    exit(64)
}

/// Prints progress on standard error.
func note(_ text: String) { FileHandle.standardError.write(Data("fault-bench: \(text)\n".utf8)) }

let programs = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
    .deletingLastPathComponent()
let batonPath = programs.appendingPathComponent("baton").path
let devicePath = programs.appendingPathComponent("baton-fault-device").path
for path in [batonPath, devicePath] where !FileManager.default.isExecutableFile(atPath: path) {
    FileHandle.standardError.write(Data("Error: \(path) is missing; build it first (swift build -c release)\n".utf8))
    exit(69)
}
let directory = NSTemporaryDirectory() + "baton-fault-bench-" + UUID().uuidString
let password = "fault bench password"
let server: BatonServer
do {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    try BatonServer.addUser(binary: batonPath, directory: directory, name: "bench", password: password)
    server = try BatonServer(binary: batonPath, directory: directory, tokenLifetime: options.tokenLifetime)
} catch {
    FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
    try? FileManager.default.removeItem(atPath: directory)
    exit(70)
}

let setup = BenchSetup(devicePath: devicePath, username: "bench", password: password, serverPort: server.port,
                       tokenLifetime: options.tokenLifetime, faultScale: options.faultScale, directory: directory, bound: options.bound)
let budget = (options.lifetimes + options.devices - 1) / options.devices
var seeds = SeededRandom(seed: options.seed)
var started: [SimulatedDevice] = []
note("\(options.devices) \(options.bound ? "bound" : "unbound") devices × \(budget) token lifetimes of \(options.tokenLifetime) s, seed \(options.seed), server on port \(server.port)")
let startTime = Date()
for index in 0..<options.devices {
    do {
        let device = try SimulatedDevice(index: index, kind: options.kinds[index % options.kinds.count], setup: setup,
                                         budget: budget, seed: seeds.next())
        started.append(device)
        device.start()
    } catch {
        note("cannot start device \(index): \(error)")
    }
    Thread.sleep(forTimeInterval: 0.2)  // staggered logins, as devices would not all start in one instant
}

let devices = started
let allDone = DispatchSemaphore(value: 0)
Thread {
    for device in devices { device.wait() }
    allDone.signal()
}.start()
var stoppedEarly = false
while allDone.wait(timeout: .now() + 10) == .timedOut {
    let lived = devices.map(\.lifetimes).reduce(0, +)
    let elapsed = Date().timeIntervalSince(startTime)
    note("\(Int(elapsed)) s: \(lived) of \(budget * devices.count) lifetimes")
    if elapsed > options.maxSeconds {
        stoppedEarly = true
        note("time limit reached: stopping every device")
        for device in devices { device.finish() }
        allDone.wait()
        break
    }
}
server.stop()

let report = Report(rows: options.kinds.map { kind in
    (kind, devices.filter { $0.kind == kind }.map(\.tally).reduce(Tally(), +))
}, faultScale: options.faultScale, bound: options.bound)
print(report.render())
print("")
print("\(options.devices) devices, \(report.total.lifetimes) token lifetimes of \(options.tokenLifetime) s in \(Int(Date().timeIntervalSince(startTime))) s, seed \(options.seed)"
      + (stoppedEarly ? " (stopped at the time limit)" : ""))
print(report.verdict)
try? FileManager.default.removeItem(atPath: directory)
let missed = report.mustBeZero.forcedLogouts > 0 || report.total.theftsDetected < report.total.thefts || report.total.crashes > 0
exit(missed ? 2 : 0)
