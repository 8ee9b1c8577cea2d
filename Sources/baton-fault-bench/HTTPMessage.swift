/// Just enough HTTP/1.1 to frame messages on the wire: where a head ends and how long the whole
/// message is (Content-Length; Baton's answers always carry it). Pure functions over bytes.
enum HTTPMessage {
    /// The length of the head including its blank line, or nil while incomplete.
    static func headLength(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count where bytes[index] == 10 && bytes[index - 1] == 13 && bytes[index - 2] == 10 && bytes[index - 3] == 13 {
            return index + 1
        }
        return nil
    }

    /// The whole message's length (head + Content-Length), or nil while the head is incomplete.
    static func length(of bytes: [UInt8]) -> Int? {
        guard let head = headLength(bytes) else { return nil }
        let text = String(decoding: bytes[..<head], as: UTF8.self).lowercased()
        for line in text.split(separator: "\r\n") where line.hasPrefix("content-length:") {
            return head + (Int(line.dropFirst("content-length:".count).trimmingCharacters(in: " ")) ?? 0)
        }
        return head
    }

    /// The status code of a response, or nil.
    static func status(_ bytes: [UInt8]) -> Int? {
        let line = String(decoding: bytes.prefix(32), as: UTF8.self).split(separator: " ")
        return line.count >= 2 ? Int(line[1]) : nil
    }

    /// A response's body as text.
    static func body(_ bytes: [UInt8]) -> String {
        guard let head = headLength(bytes) else { return "" }
        return String(decoding: bytes[head...], as: UTF8.self)
    }

    /// A request with a token (`scheme` Bearer or DPoP, never with a proof: the thief has no
    /// key), the device id and no body.
    static func request(_ method: String, _ path: String, token: String, scheme: String = "Bearer", deviceID: String, port: UInt16) -> [UInt8] {
        Array("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: \(scheme) \(token)\r\nX-Device-Id: \(deviceID)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
    }
}

private extension Substring {
    func trimmingCharacters(in set: Character) -> Substring {
        var text = self
        while text.first == set { text = text.dropFirst() }
        while text.last == set { text = text.dropLast() }
        return text
    }
}
