// libFuzzer target: the token decoder and MAC check (Sources/BatonCore/Token.swift,
// Base64URL.swift, Crypto.swift), compiled together with them by scripts/fuzz. The key is
// fixed so that the seed corpus holds tokens that verify; a mutated token must not. The codec
// is a ring (key 0, the bt1_ key, and keys 1 and 2 for bt2_ tokens), so both formats are fuzzed.
// Invariants: authenticate never traps; anything it accepts is byte for byte a token of one of
// its keys (its claims re-encode to the same text, the key it names is one of the ring's);
// Base64URL decodes what it encodes.

let fuzzKey = TokenKey(bytes: Array(0..<32))!
let fuzzCodec = TokenCodec(keys: [0: fuzzKey, 1: TokenKey(bytes: Array(32..<64))!, 2: TokenKey(bytes: Array(64..<96))!], minting: 2)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzToken(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: bytes, as: UTF8.self)
    if let presented = fuzzCodec.authenticate(text) {
        let isBt1 = text.utf8.count == TokenCodec.length && text.hasPrefix(TokenCodec.prefix)
        let isBt2 = text.utf8.count == TokenCodec.ringLength && text.hasPrefix(TokenCodec.ringPrefix)
        precondition(isBt1 ? presented.keyID == 0 : isBt2 && (1...2).contains(presented.keyID), "accepted a malformed token")
        let prefix = isBt1 ? TokenCodec.prefix : TokenCodec.ringPrefix
        let body = Base64URL.decode(text.utf8.dropFirst(prefix.utf8.count))!
        precondition(prefix + Base64URL.encode(body) == text, "accepted a non-canonical encoding")
        precondition(presented.chainID.rawValue > 0 && presented.hash == TokenHash(of: text))
    }
    if let decoded = Base64URL.decode(bytes[...]) {
        precondition(Base64URL.decode(Array(Base64URL.encode(decoded).utf8)[...]) == decoded, "Base64URL round trip")
    }
    return 0
}
