import Glibc

/// The block of addresses one client controls, as a key for counting: an IPv4 address
/// itself, an IPv6 address by its /64 (one host is usually given a whole /64 and can pick any
/// address in it, so counting per /128 would let it rotate past every per-address limit).
/// Pure (inet_pton and inet_ntop only parse and print).
package enum AddressGroup {
    /// `ip` as its group's key: IPv4 unchanged, IPv6 as `2001:db8:1:2::/64`; text that is no
    /// address is its own key.
    package static func key(_ ip: String) -> String {
        guard ip.contains(":") else { return ip }
        var address = in6_addr()
        guard inet_pton(AF_INET6, ip, &address) == 1 else { return ip }
        // An IPv4-mapped address (::ffff:a.b.c.d) is that IPv4 address.
        let isMapped = withUnsafeBytes(of: &address) { Array($0[0..<10]).allSatisfy { $0 == 0 } && $0[10] == 0xff && $0[11] == 0xff }
        if isMapped {
            return withUnsafeBytes(of: &address) { "\($0[12]).\($0[13]).\($0[14]).\($0[15])" }
        }
        withUnsafeMutableBytes(of: &address) { for index in 8..<16 { $0[index] = 0 } }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return ip }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/64"
    }
}
