// libFuzzer target: the command line's value parsers, compiled together with them by
// scripts/fuzz: durations (Sources/BatonCLI/OptionParser.swift parseDuration), CIDRs, listen
// addresses and IP addresses (Sources/BatonHTTP/SocketAddress.swift). Any text must give a
// value or nil, never a trap. Invariants: a duration is not negative; what an address or
// CIDR prints parses back to the same value.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFlagParsers(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let duration = parseDuration(text) { precondition(duration >= .zero, "negative duration from \(text)") }
    if let address = IPAddress(text) { precondition(IPAddress(address.description) == address, "IP round trip: \(text)") }
    if let cidr = CIDR(text) { precondition(CIDR(cidr.description) == cidr, "CIDR round trip: \(text)") }
    if let listen = ListenAddress(text) { precondition(ListenAddress(listen.description) == listen, "listen round trip: \(text)") }
    return 0
}
