// swift-tools-version:6.0
//
// Baton: an old-for-new token exchange service.
// No Swift package dependencies, by design: only Foundation, Dispatch, Glibc and
// system C libraries (libsqlite3, libcrypto, libargon2, libpq, libcurl) through systemLibrary targets.
import PackageDescription

// An app that adds this package on a Mac or in Xcode sees only the client library: the server,
// its C libraries, the benchmarks and the test helpers need Linux (epoll, Debian's -dev
// packages), so they are declared only when the manifest is evaluated on Linux
// (docs/client.md, "Adding the package to an app").
var products: [Product] = [
    // The client library mobile apps embed (Foundation only; nothing of the server).
    .library(name: "BatonClient", targets: ["BatonClient"]),
]
var targets: [Target] = []

#if os(Linux)
// On Linux the device key (DPoP) signs with libcrypto; on Apple platforms with CryptoKit.
let clientDependencies: [Target.Dependency] = ["CCrypto"]
#else
let clientDependencies: [Target.Dependency] = []
#endif
targets += [
    // The client library: sessions, single-flight exchange, replay, credential stores. Its
    // privacy manifest (PrivacyInfo.xcprivacy) declares the required-reason APIs it calls.
    .target(name: "BatonClient", dependencies: clientDependencies, resources: [.copy("PrivacyInfo.xcprivacy")]),
]

#if os(Linux)
products += [
    .executable(name: "baton", targets: ["baton"]),
    .executable(name: "baton-bench", targets: ["baton-bench"]),
    .executable(name: "baton-demo", targets: ["baton-demo"]),
]
targets += [
    // System C libraries, installed from Debian's -dev packages by scripts/setup.
    .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
    .systemLibrary(name: "CCrypto", providers: [.apt(["libssl-dev"])]),
    .systemLibrary(name: "CArgon2", providers: [.apt(["libargon2-dev"])]),
    .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
    // libcurl's easy interface, for webhook deliveries (blocking, on the deliverer's threads).
    .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
    // Linux's epoll, which Glibc's Swift module leaves out (no library to link).
    .systemLibrary(name: "CSystem"),

    // Locks shared by the threads of the store and the server.
    .target(name: "BatonSync"),
    // Tokens, chains, rules R1-R7, clock, errors. No SQLite, no files, no sockets.
    .target(name: "BatonCore", dependencies: ["BatonSync", "CCrypto", "CArgon2"]),
    // The seam between the API and the stores: the `LineageStore` protocol and the values it trades in.
    .target(name: "BatonStorage", dependencies: ["BatonCore"]),
    // Proof of possession (RFC 9449 DPoP): the proof check, the jti replay cache, stateless
    // server nonces, and a software ES256 signer. Knows nothing of stores or HTTP.
    .target(name: "BatonDPoP", dependencies: ["BatonCore", "BatonSync", "CCrypto"]),
    // The operations (login, exchange, verify, logout, step-up, password changes, revocations),
    // written once against a small transaction interface that each store implements.
    .target(name: "BatonOperations", dependencies: ["BatonCore", "BatonStorage", "BatonSync", "CSystem"]),
    // A SQLite VFS (C) that writes each commit's WAL frames in one write instead of two per page.
    .target(name: "CBatchedWAL", dependencies: ["CSQLite"]),
    // The lineage store on SQLite: connection, group-commit writer, rows and SQL.
    .target(
        name: "BatonStore",
        dependencies: ["BatonCore", "BatonStorage", "BatonOperations", "BatonSync", "CSQLite", "CSystem", "CBatchedWAL"],
        resources: [.embedInCode("schema.sql")]  // a symlink to the top-level schema.sql
    ),
    // The lineage store on PostgreSQL: libpq connections in a pool, row locks, rows and SQL.
    .target(
        name: "BatonPostgres",
        dependencies: ["BatonCore", "BatonStorage", "BatonOperations", "BatonSync", "CLibPQ", "CSystem"],
        resources: [.embedInCode("schema-postgresql.sql")]  // a symlink to the top-level schema-postgresql.sql
    ),
    // Login through an identity provider (RFC 8693 token exchange): the issuers' settings, their
    // keys (discovery and JWKS over HTTPS with libcurl, cached within bounds), and the pure
    // checks of an ID token or a backend's assertion. Knows nothing of stores or HTTP serving.
    .target(name: "BatonIdentity", dependencies: ["BatonCore", "BatonStorage", "BatonDPoP", "BatonSync", "CCrypto", "CCurl"]),
    // Webhook delivery: the signing (Standard Webhooks), the HTTP client (libcurl) and the
    // worker threads that send the outbox the operations write. Knows nothing of routing.
    .target(name: "BatonWebhooks", dependencies: ["BatonCore", "BatonStorage", "BatonOperations", "BatonSync", "CCurl"]),
    // HTTP/1.1 on POSIX sockets: a pure request parser, responses, the server. Knows nothing of tokens.
    .target(name: "BatonHTTP", dependencies: ["BatonSync", "CSystem"]),
    // The /v1 API: routes, JSON, the one mapping of errors to statuses, metrics, access log.
    .target(name: "BatonAPI", dependencies: ["BatonCore", "BatonStorage", "BatonHTTP", "BatonSync", "BatonDPoP", "BatonIdentity"]),
    // Command line: `baton serve`, `baton admin ...`.
    .target(name: "BatonCLI", dependencies: ["BatonCore", "BatonStorage", "BatonOperations", "BatonStore", "BatonPostgres", "BatonHTTP", "BatonAPI", "BatonSync", "BatonWebhooks", "BatonDPoP", "BatonIdentity"]),
    .executableTarget(name: "baton", dependencies: ["BatonCLI"]),

    // Store-level benchmark with a raw-SQLite baseline (run on a release build).
    .executableTarget(name: "baton-bench", dependencies: ["BatonCore", "BatonStorage", "BatonStore", "CSQLite"]),
    // CPU per DPoP proof check, and the replay cache's memory (run on a release build).
    .executableTarget(name: "baton-dpop-bench", dependencies: ["BatonCore", "BatonDPoP"]),
    // Test helper: exchanges in a loop and reports each acknowledged token, to be killed -9.
    .executableTarget(name: "baton-exchange-loop", dependencies: ["BatonCore", "BatonStorage", "BatonStore"]),

    // Example: logs in and calls an endpoint through the gateway, printing each step.
    .executableTarget(name: "baton-demo", dependencies: ["BatonClient"]),
    // Test helper: a client process sharing a file store with another (the two-process test).
    .executableTarget(name: "baton-client-probe", dependencies: ["BatonClient"]),
    // The false-logout benchmark: simulated devices through a fault-injecting relay
    // (scripts/bench-false-logout), and the device process each of them runs.
    .executableTarget(name: "baton-fault-bench", dependencies: ["CSpawn"]),
    // It defines clock_gettime to move its own wall clock (clock-jump, WallClock.swift): the
    // symbol is exported so that Foundation's Date() reads it too.
    .executableTarget(name: "baton-fault-device", dependencies: ["BatonClient"],
                      linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic-symbol=clock_gettime"], .when(platforms: [.linux]))]),

    // The deterministic simulation (docs/reliability.md): the shipped BatonSession against the
    // shipped API and TokenStore, in one process, on one thread, every nondeterminism drawn
    // from a seed; `baton-sim` runs seeds, replays one, and hunts mutants.
    .target(name: "BatonSimulation",
            dependencies: ["BatonClient", "BatonAPI", "BatonCore", "BatonHTTP", "BatonStorage", "BatonStore"]),
    .executableTarget(name: "baton-sim", dependencies: ["BatonSimulation"]),
    // Power cuts (docs/reliability.md): a recording SQLite VFS (C), the crash states built from
    // its log and checked against what was acknowledged, and the campaign's command.
    .target(name: "CCrashVFS", dependencies: ["CSQLite"]),
    .target(name: "BatonCrash", dependencies: ["CCrashVFS", "BatonCore", "BatonStorage", "BatonStore"]),
    .executableTarget(name: "baton-crash", dependencies: ["BatonCrash"]),

    // Test-only helpers shared by test targets: the server and nginx launchers, and
    // ChildProcess (posix_spawn; CSpawn declares the glibc extensions it uses).
    .systemLibrary(name: "CSpawn", path: "Tests/CSpawn"),
    .target(name: "BatonTestSupport", dependencies: ["BatonCore", "BatonStorage", "BatonStore", "BatonHTTP", "CSpawn"],
            path: "Tests/BatonTestSupport"),

    .testTarget(name: "BatonCoreTests", dependencies: ["BatonCore", "CArgon2"]),
    .testTarget(name: "BatonHTTPTests", dependencies: ["BatonHTTP"]),
    // The proof check, table-driven, and against an independent JOSE implementation (PyPI's joserfc).
    .testTarget(name: "BatonDPoPTests", dependencies: ["BatonDPoP", "BatonCore", "BatonTestSupport"]),
    // The CLI's pure parts (renderers, help layout, option parsing) without a process.
    .testTarget(name: "BatonIdentityTests", dependencies: ["BatonIdentity", "BatonDPoP", "BatonCore"]),
    .testTarget(name: "BatonCLITests", dependencies: ["BatonCLI", "BatonCore", "BatonStorage", "BatonStore"]),
    .testTarget(name: "BatonServerTests", dependencies: ["BatonCore", "BatonStorage", "BatonStore", "BatonHTTP", "BatonAPI", "BatonTestSupport", "BatonDPoP"]),
    // BatonDPoP and BatonCore check the client's proofs with the server's own checker.
    .testTarget(name: "BatonClientTests", dependencies: ["BatonClient", "BatonTestSupport", "BatonDPoP", "BatonCore"]),
    .testTarget(
        name: "BatonStoreTests",
        dependencies: ["BatonStore", "BatonStorage", "BatonPostgres", "BatonTestSupport", "CSQLite", "BatonCrash"]
    ),
]
#endif

let package = Package(
    name: "Baton",
    // Apple platforms matter to BatonClient only (the server builds on Linux). The floor is set
    // by `Duration` and `Task.sleep(for:)` (iOS 16, macOS 13, tvOS 16, watchOS 9); the per-task
    // URLSession delegate the client uses needs iOS 15 / macOS 12, below that floor.
    platforms: [.iOS(.v16), .macOS(.v13), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    products: products,
    targets: targets
)
