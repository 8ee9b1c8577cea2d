// libFuzzer target: the DPoP proof check (Sources/BatonDPoP: CompactJWS, StrictJSONParser,
// TargetURI, ProofKey over libcrypto, DPoPProof, ProofChecker), compiled together with its
// sources by scripts/fuzz. The first byte picks what the rest is:
//   0: a `DPoP` header value, checked for POST https://baton.example/v1/exchange at a fixed
//      instant (the seed corpus holds proofs valid then, so mutations reach every check);
//   1: a URI for `htu` normalization; 2: JSON for the strict parser.
// Invariants: nothing traps; a proof accepted once is refused as a replay the second time;
// normalizing a normalized URI changes nothing and keeps no query or fragment; the JSON
// parser answers a value or a typed failure.

let fuzzNow = Instant(milliseconds: 1_790_000_000_000)
let fuzzChecker = ProofChecker(policy: ProofPolicy(), replayCache: ReplayCache(capacity: 1_000, window: .seconds(70)))
let fuzzToken = TokenHash(of: "bt1_" + String(repeating: "A", count: 80))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDPoPProof(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let text = String(decoding: bytes, as: UTF8.self)
    switch data[0] {
    case 0:
        let url = "https://baton.example/v1/exchange"
        if let thumbprint = try? fuzzChecker.check(text, method: "POST", url: url, tokenHash: fuzzToken, now: fuzzNow) {
            precondition(thumbprint.bytes.count == 32)
            do {
                _ = try fuzzChecker.check(text, method: "POST", url: url, tokenHash: fuzzToken, now: fuzzNow)
                preconditionFailure("a proof was accepted twice")
            } catch {
                precondition(error == .replayed || error == .replayCacheFull, "second check: \(error)")
            }
        }
    case 1:
        if let uri = TargetURI(text) {
            precondition(TargetURI(uri.text) == uri, "normalization is not idempotent: \(uri.text)")
            precondition(!uri.text.contains("?") && !uri.text.contains("#"), "query or fragment kept")
        }
    default:
        _ = try? StrictJSONParser.parse(bytes)
    }
    return 0
}
