// libFuzzer target: Baton's HTTP/1.1 request parser (Sources/BatonHTTP/RequestParser.swift),
// compiled together with it by scripts/fuzz. Any input must give a request, "need more
// data" or a typed parse error: never a trap. Invariants checked on every input:
// - a complete request consumed between 1 and all of the bytes;
// - the consumed prefix alone parses to the same request (framing does not depend on
//   what follows it, RFC 9112 §6.3).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPRequestParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var limits = RequestParser.Limits()
    limits.maxHeadBytes = 4096  // small limits reach the limit checks with small inputs
    limits.maxBodyBytes = 1024
    guard case .complete(let request, let consumed)? = try? RequestParser.parse(bytes[...], limits: limits) else { return 0 }
    precondition(consumed >= 1 && consumed <= bytes.count, "consumed \(consumed) of \(bytes.count)")
    guard case .complete(let again, let consumedAgain)? = try? RequestParser.parse(bytes[..<consumed], limits: limits) else {
        preconditionFailure("the consumed prefix alone does not parse")
    }
    precondition(again == request && consumedAgain == consumed, "the consumed prefix parses differently")
    return 0
}
