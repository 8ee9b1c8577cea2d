/// Why a request was rejected while parsing. Every case is answered with its `status` and
/// `Connection: close`: after a framing error the byte stream cannot be trusted.
package enum HTTPParseError: Error, Equatable, Sendable {
    case malformedRequestLine
    case unsupportedVersion
    case invalidHeaderName
    case invalidHeaderValue
    case obsoleteLineFolding
    case missingHost
    case duplicateHost
    case transferEncodingNotSupported
    case contentLengthWithTransferEncoding
    case invalidContentLength
    case duplicateContentLength
    case headersTooLarge
    case tooManyHeaders
    case bodyTooLarge

    /// The HTTP status to answer with.
    package var status: Int {
        switch self {
        case .headersTooLarge, .tooManyHeaders: 431
        case .bodyTooLarge: 413
        case .unsupportedVersion: 505
        default: 400
        }
    }

    /// A sentence naming the problem, for `error_description`.
    package var description: String {
        switch self {
        case .malformedRequestLine: "Malformed request line."
        case .unsupportedVersion: "Only HTTP/1.0 and HTTP/1.1 are supported."
        case .invalidHeaderName: "Invalid header field name."
        case .invalidHeaderValue: "Invalid character in a header field value."
        case .obsoleteLineFolding: "Obsolete line folding is not allowed."
        case .missingHost: "HTTP/1.1 requests need a Host header."
        case .duplicateHost: "More than one Host header."
        case .transferEncodingNotSupported: "Transfer-Encoding is not supported; send Content-Length."
        case .contentLengthWithTransferEncoding: "Content-Length together with Transfer-Encoding."
        case .invalidContentLength: "Invalid Content-Length."
        case .duplicateContentLength: "More than one Content-Length."
        case .headersTooLarge: "Request line and headers exceed the limit."
        case .tooManyHeaders: "Too many header fields."
        case .bodyTooLarge: "Request body exceeds the limit."
        }
    }
}
