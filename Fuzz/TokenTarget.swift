// libFuzzer target: the token decoder and MAC check (Sources/BatonCore/Token.swift,
// Base64URL.swift, Crypto.swift), compiled together with them by scripts/fuzz. The key is
// fixed so that the seed corpus holds tokens that verify; a mutated token must not.
// Invariants: authenticate never traps; anything it accepts is byte for byte a token this
// key issued (its claims re-encode to the same text); Base64URL decodes what it encodes.

let fuzzKey = TokenKey(bytes: Array(0..<32))!
let fuzzCodec = TokenCodec(key: fuzzKey)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzToken(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: bytes, as: UTF8.self)
    if let presented = fuzzCodec.authenticate(text) {
        precondition(text.utf8.count == TokenCodec.length && text.hasPrefix(TokenCodec.prefix), "accepted a malformed token")
        let body = Base64URL.decode(text.utf8.dropFirst(TokenCodec.prefix.utf8.count))!
        precondition(TokenCodec.prefix + Base64URL.encode(body) == text, "accepted a non-canonical encoding")
        precondition(presented.chainID.rawValue > 0 && presented.hash == TokenHash(of: text))
    }
    if let decoded = Base64URL.decode(bytes[...]) {
        precondition(Base64URL.decode(Array(Base64URL.encode(decoded).utf8)[...]) == decoded, "Base64URL round trip")
    }
    return 0
}
