/// A parsed HTTP/1.x request. Header names are lowercased; values are as sent, without
/// surrounding whitespace.
package struct HTTPRequest: Sendable, Equatable {
    package var method: String
    /// The request-target as sent (origin-form: path and optional query).
    package var target: String
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    package var minorVersion: Int
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]

    package init(method: String, target: String, minorVersion: Int = 1, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.minorVersion = minorVersion
        self.headers = headers
        self.body = body
    }

    /// The path without the query.
    package var path: Substring { target[..<(target.utf8.firstIndex(of: UInt8(ascii: "?")) ?? target.endIndex)] }  // bytes, not Characters: cheaper

    /// The first value of header `name` (lowercase).
    package func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    /// Whether the connection stays open after this request (RFC 9112 §9.3).
    package var keepsAlive: Bool {
        guard headers.contains(where: { $0.name == "connection" }) else { return minorVersion >= 1 }  // the usual case, cheaply
        let tokens = headers.filter { $0.name == "connection" }
            .flatMap { $0.value.lowercased().split(separator: ",").map { $0.trimmingSpaces } }
        if tokens.contains("close") { return false }
        return minorVersion >= 1 || tokens.contains("keep-alive")
    }

    package static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.target == rhs.target && lhs.minorVersion == rhs.minorVersion
            && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
            && lhs.body == rhs.body
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    package var trimmingSpaces: Substring {
        var slice = self
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return slice
    }
}
