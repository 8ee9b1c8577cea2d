/// A response to serialise: status, headers (besides the framing ones the writer adds), body.
package struct HTTPResponse: Sendable, Equatable {
    package var status: Int
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]

    package init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response (`Content-Type: application/json`).
    package static func json(_ status: Int, _ text: String, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(text.utf8))
    }

    package static func == (lhs: HTTPResponse, rhs: HTTPResponse) -> Bool {
        lhs.status == rhs.status && lhs.headers.map(\.name) == rhs.headers.map(\.name)
            && lhs.headers.map(\.value) == rhs.headers.map(\.value) && lhs.body == rhs.body
    }

    /// The reason phrase for the statuses Baton sends.
    package static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 204: "No Content"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status"
        }
    }

    /// The bytes on the wire: status line, headers, `Content-Length`, `Connection`, body.
    /// - Parameters:
    ///   - keepAlive: false adds `Connection: close`.
    ///   - includeBody: false for HEAD (the length is still the GET's).
    package func serialized(keepAlive: Bool, includeBody: Bool = true, date: String? = nil) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256 + body.count)
        serialize(into: &bytes, keepAlive: keepAlive, includeBody: includeBody, date: date.map { Array($0.utf8) })
        return bytes
    }

    /// Appends the bytes on the wire to `bytes` (a connection's output buffer), with no
    /// intermediate array: this runs for every response.
    /// - Parameter date: the `Date` header's value, already as bytes (`HTTPDate`).
    package func serialize(into bytes: inout [UInt8], keepAlive: Bool, includeBody: Bool = true, date: [UInt8]?) {
        bytes.append("HTTP/1.1 ")
        Self.appendDecimal(status, to: &bytes)
        bytes.append(32)
        bytes.append(utf8: Self.reason(status))
        bytes.append(13)
        bytes.append(10)
        if let date {
            bytes.append("Date: ")
            bytes.append(contentsOf: date)
            bytes.append(13)
            bytes.append(10)
        }
        for (name, value) in headers {
            bytes.append(utf8: name)
            bytes.append(58)
            bytes.append(32)
            bytes.append(utf8: value)
            bytes.append(13)
            bytes.append(10)
        }
        if status != 204 {
            bytes.append("Content-Length: ")
            Self.appendDecimal(body.count, to: &bytes)
            bytes.append(13)
            bytes.append(10)
        }
        if !keepAlive { bytes.append("Connection: close\r\n") }
        bytes.append(13)
        bytes.append(10)
        if includeBody, status != 204 { bytes.append(contentsOf: body) }
    }

    /// Appends a non-negative integer's decimal digits (what `String(value)` would give).
    package static func appendDecimal(_ value: Int, to bytes: inout [UInt8]) {
        precondition(value >= 0, "negative length or status")
        var divisor = 1
        while divisor <= value / 10 { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            bytes.append(UInt8(48 + rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }
}
