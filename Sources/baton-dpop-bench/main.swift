// CPU per DPoP proof check (RFC 9449), on one thread, and the replay cache's memory.
// Run on a release build: `swift build -c release --product baton-dpop-bench &&
// .build/release/baton-dpop-bench [proofs]`. Proofs are made before the clock starts; each
// stage is timed over all of them with the process's CPU clock (CLOCK_PROCESS_CPUTIME_ID)
// and the best of three rounds is printed, in microseconds per proof.
import BatonCore
import BatonDPoP
import Glibc

let count = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 5000
let url = "https://baton.example/v1/verify"
let token = "bt1_" + String(repeating: "A", count: 80)
let tokenHash = TokenHash(of: token)
let now = SystemClock().now()

func cpuSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

/// Best of three rounds of `body` over `count` items, in µs per item.
func measure(_ body: () -> Void) -> Double {
    var best = Double.infinity
    for _ in 0..<3 {
        let start = cpuSeconds()
        body()
        best = min(best, (cpuSeconds() - start) / Double(count) * 1e6)
    }
    return best
}

func report(_ label: String, _ microseconds: Double) {
    let text = String(Int((microseconds * 10).rounded()))
    print(label + String(repeating: " ", count: max(1, 44 - label.count)) + String(text.dropLast()) + "." + String(text.last!) + " µs")
}

var sink = 0
for (name, signer) in [("ES256", ProofSigner(.es256(.generate()))), ("EdDSA", ProofSigner(.ed25519(.generate())))] {
    let proofs = (0..<count).map { _ in signer.proof(method: "GET", url: url, token: token, now: now) }
    print("\(name): \(count) proofs of \(proofs[0].utf8.count) bytes")
    report("  sign (software key)", measure { for _ in 0..<count { sink &+= signer.proof(method: "GET", url: url, token: token, now: now).utf8.count } })
    report("  parse (compact JWS, JSON)", measure { for proof in proofs { sink &+= (try? CompactJWS(proof))?.signature.count ?? 0 } })
    report("  verify (every check but replay)", measure {
        for proof in proofs {
            sink &+= (try? DPoPProof.verify(proof, method: "GET", url: url, tokenHash: tokenHash, now: now, policy: ProofPolicy())) == nil ? 0 : 1
        }
    })
    // The server's split (verify and authz): every check but the signature first, the
    // signature once the key proves to be the chain's. The first part is the proof's Swift side.
    let checker = ProofChecker(policy: ProofPolicy())
    report("  checks before the signature (server)", measure {
        for proof in proofs {
            if let accepted = try? checker.acceptDeferringSignature(proof, method: "GET", url: url, tokenHash: tokenHash, now: now) {
                sink &+= accepted.0.text.utf8.count
            }
        }
    })
    let pending = proofs.compactMap { try? DPoPProof.verifyDeferringSignature($0, method: "GET", url: url, tokenHash: tokenHash, now: now, policy: ProofPolicy()).1 }
    report("  signature alone", measure { for signature in pending { sink &+= (try? signature.verify()) == nil ? 0 : 1 } })
    // A server sees many devices: the same stage with every proof by a key of its own.
    let manyKeys = (0..<count).compactMap { _ in
        let device = name == "ES256" ? ProofSigner(.es256(.generate())) : ProofSigner(.ed25519(.generate()))
        return try? DPoPProof.verifyDeferringSignature(device.proof(method: "GET", url: url, token: token, now: now), method: "GET", url: url,
                                                       tokenHash: tokenHash, now: now, policy: ProofPolicy()).1
    }
    report("  signature alone, a key per proof", measure { for signature in manyKeys { sink &+= (try? signature.verify()) == nil ? 0 : 1 } })
    var accepted = 0
    report("  check (verify + replay cache)", measure {
        // A new cache per round: the rounds present the same proofs. One key makes them all, so
        // its share is the whole cache (the server's default share would refuse the rest).
        let checker = ProofChecker(policy: ProofPolicy(), replayCache: ReplayCache(share: 500_000, window: ProofPolicy().replayWindow))
        for proof in proofs where (try? checker.check(proof, method: "GET", url: url, tokenHash: tokenHash, now: now)) != nil { accepted += 1 }
    })
    guard accepted == 3 * count else { fatalError("\(name): only \(accepted) of \(3 * count) checks accepted") }
}

// The replay cache alone: time per remember, and resident memory when full.
/// The resident set size, from /proc/self/statm's second field (pages).
func residentBytes() -> Int {
    guard let file = fopen("/proc/self/statm", "r") else { return 0 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 128)
    guard fgets(&line, 128, file) != nil else { return 0 }
    let fields = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).split(separator: " ")
    guard fields.count >= 2, let pages = Int(fields[1]) else { return 0 }
    return pages * sysconf(Int32(_SC_PAGESIZE))
}

let entries = 1_000_000
let thumbprint = ES256SigningKey.generate().thumbprint
let jtis = (0..<entries).map { Base64URL.encode(withUnsafeBytes(of: UInt64($0).bigEndian) { Array($0) } + [UInt8](repeating: 7, count: 8)) }
let before = residentBytes()
let cache = ReplayCache(capacity: entries, share: entries, window: .seconds(70))  // one key fills it: no per-key share
let start = cpuSeconds()
for jti in jtis where cache.remember(jti, of: thumbprint, now: now) != .fresh { fatalError("replay cache refused early") }
let perEntry = (cpuSeconds() - start) / Double(entries) * 1e9
let grown = residentBytes() - before
print("replay cache: \(entries) entries, \(Int(perEntry)) ns per remember, resident memory +\(grown / 1_048_576) MiB (\(grown / entries) bytes per entry)")
print("full: \(cache.remember("one more", of: thumbprint, now: now))")
if sink == 42 { print("") }
