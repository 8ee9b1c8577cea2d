/// Parses HTTP/1.x requests from bytes: a pure function with no I/O, clock or Foundation,
/// so it can be table-tested at every split point and fuzzed.
///
/// Strict by design (a proxy's upstream must not disagree with the proxy about framing,
/// RFC 9112 §11.2): it rejects rather than repairs. Only Content-Length bodies are accepted.
package enum RequestParser {
    /// Size limits, with the contract's defaults.
    package struct Limits: Sendable, Equatable {
        /// Request line plus headers plus the blank line (431 beyond).
        package var maxHeadBytes = 16 * 1024
        /// Body bytes (413 beyond).
        package var maxBodyBytes = 16 * 1024
        /// Header fields (431 beyond).
        package var maxHeaderCount = 100
        package init() {}
    }

    /// The outcome of a parse attempt.
    package enum ParseResult: Equatable, Sendable {
        /// The bytes so far are a valid prefix; read more.
        case needMoreData
        /// A whole request, and how many bytes it used (the rest belongs to the next one).
        case complete(HTTPRequest, consumed: Int)
    }

    /// Parses the first request in `bytes`.
    /// - Throws: `HTTPParseError` as soon as the bytes cannot begin a valid request.
    package static func parse(_ bytes: ArraySlice<UInt8>, limits: Limits = Limits()) throws(HTTPParseError) -> ParseResult {
        var start = bytes.startIndex
        // RFC 9112 §2.2: a server SHOULD ignore at least one empty line received before the request-line.
        while bytes.endIndex - start >= 2, bytes[start] == cr, bytes[start + 1] == lf { start += 2 }
        if bytes.endIndex - start == 1, bytes[start] == cr { return .needMoreData }  // half of an empty line
        guard let headEnd = findHeadEnd(bytes, from: start, limit: limits.maxHeadBytes) else {
            try validatePrefix(bytes[start...])
            if bytes.endIndex - start > limits.maxHeadBytes { throw .headersTooLarge }
            return .needMoreData
        }
        // The same byte-level checks first, so that the answer does not depend on how the
        // bytes were split into reads (the fuzz test feeds them in random chunks).
        try validatePrefix(bytes[start..<headEnd + 2])
        var lines = splitLines(bytes[start..<headEnd])
        let requestLine = lines.removeFirst()
        var request = try parseRequestLine(requestLine)
        guard lines.count <= limits.maxHeaderCount else { throw .tooManyHeaders }
        for line in lines { request.headers.append(try parseHeaderLine(line)) }
        let length = try bodyLength(request)
        guard length <= limits.maxBodyBytes else { throw .bodyTooLarge }
        let bodyStart = headEnd + 4
        guard bytes.endIndex - bodyStart >= length else { return .needMoreData }
        request.body = Array(bytes[bodyStart..<bodyStart + length])
        return .complete(request, consumed: bodyStart + length - bytes.startIndex)
    }

    // MARK: - Pieces

    private static let cr: UInt8 = 13
    private static let lf: UInt8 = 10

    /// Index of the CR of the CRLFCRLF that ends the head, searching at most `limit` bytes.
    private static func findHeadEnd(_ bytes: ArraySlice<UInt8>, from start: Int, limit: Int) -> Int? {
        let end = min(bytes.endIndex, start + limit + 4)
        var index = start
        while index + 3 < end {
            if bytes[index] == cr, bytes[index + 1] == lf, bytes[index + 2] == cr, bytes[index + 3] == lf { return index }
            index += 1
        }
        return nil
    }

    /// Rejects an incomplete head early when a byte already seen can never be valid, so that a
    /// garbage stream is answered at once instead of waiting for the limit or the timeout.
    private static func validatePrefix(_ bytes: ArraySlice<UInt8>) throws(HTTPParseError) {
        var index = bytes.startIndex
        var lineStart = true
        var inRequestLine = true
        // A bad byte in the request line makes a malformed request line; later, a bad value.
        var badByte: HTTPParseError { inRequestLine ? .malformedRequestLine : .invalidHeaderValue }
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == 0 { throw badByte }
            if byte == cr {
                if index + 1 < bytes.endIndex, bytes[index + 1] != lf { throw badByte }  // bare CR
            } else if byte == lf {
                if index == bytes.startIndex || bytes[index - 1] != cr { throw badByte }  // bare LF
                lineStart = true
                inRequestLine = false
                index += 1
                continue
            } else if lineStart, index != bytes.startIndex, byte == 32 || byte == 9 {
                throw .obsoleteLineFolding
            }
            if index == bytes.startIndex, !isTokenChar(byte) { throw .malformedRequestLine }
            lineStart = false
            index += 1
        }
    }

    /// The head's lines (without CRLF); a bare CR or LF inside is rejected.
    private static func splitLines(_ head: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = head.startIndex
        var index = head.startIndex
        while index < head.endIndex {
            if head[index] == cr, index + 1 < head.endIndex, head[index + 1] == lf {
                lines.append(head[lineStart..<index])
                index += 2
                lineStart = index
            } else {
                index += 1
            }
        }
        lines.append(head[lineStart..<head.endIndex])
        return lines
    }

    // request-line = method SP request-target SP HTTP-version   (RFC 9112 §3)
    // method = token; HTTP-version = "HTTP/" DIGIT "." DIGIT
    private static func parseRequestLine(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> HTTPRequest {
        let parts = line.split(separator: 32, maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(isTokenChar),
              !parts[1].isEmpty, parts[1].allSatisfy({ $0 > 32 && $0 < 127 })
        else { throw .malformedRequestLine }
        let version = Array(parts[2])
        guard version.count == 8, version[0..<5].elementsEqual("HTTP/".utf8), version[6] == 46,
              (48...57).contains(version[5]), (48...57).contains(version[7])
        else { throw .malformedRequestLine }
        guard version[5] == 49, version[7] == 48 || version[7] == 49 else { throw .unsupportedVersion }
        // origin-form only ("/path?query"), or "*" for OPTIONS; absolute-form is for proxies.
        guard parts[1].first == 47 || (parts[1].count == 1 && parts[1].first == 42) else { throw .malformedRequestLine }
        return HTTPRequest(method: String(decoding: parts[0], as: UTF8.self), target: String(decoding: parts[1], as: UTF8.self),
                           minorVersion: Int(version[7] - 48))
    }

    // field-line = field-name ":" OWS field-value OWS   (RFC 9112 §5)
    // field-name = token; no whitespace is allowed between the field name and colon (§5.1).
    // field-value = *field-content; field-vchar = VCHAR / obs-text; SP and HTAB inside.
    // obs-fold (a line starting with SP/HTAB) is rejected (§5.2).
    private static func parseHeaderLine(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> (name: String, value: String) {
        guard let first = line.first else { throw .invalidHeaderName }
        if first == 32 || first == 9 { throw .obsoleteLineFolding }
        guard let colon = line.firstIndex(of: 58) else { throw .invalidHeaderName }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty, name.allSatisfy(isTokenChar) else { throw .invalidHeaderName }
        var value = line[(colon + 1)...]
        while let byte = value.first, byte == 32 || byte == 9 { value.removeFirst() }
        while let byte = value.last, byte == 32 || byte == 9 { value.removeLast() }
        guard value.allSatisfy({ $0 == 9 || ($0 >= 32 && $0 != 127) }) else { throw .invalidHeaderValue }
        return (String(decoding: name, as: UTF8.self).lowercased(), String(decoding: value, as: UTF8.self))
    }

    /// The body length from the headers (RFC 9112 §6.3), with the smuggling defences.
    private static func bodyLength(_ request: HTTPRequest) throws(HTTPParseError) -> Int {
        let lengths = request.headers.filter { $0.name == "content-length" }
        let hasTransferEncoding = request.headers.contains { $0.name == "transfer-encoding" }
        if hasTransferEncoding { throw lengths.isEmpty ? .transferEncodingNotSupported : .contentLengthWithTransferEncoding }
        let hosts = request.headers.filter { $0.name == "host" }.count
        if hosts > 1 { throw .duplicateHost }
        if hosts == 0, request.minorVersion == 1 { throw .missingHost }
        guard let length = lengths.first else { return 0 }
        guard lengths.count == 1 else { throw .duplicateContentLength }
        // Content-Length = 1*DIGIT; at most 10 digits so the value cannot overflow.
        let digits = length.value.utf8
        guard !digits.isEmpty, digits.count <= 10, digits.allSatisfy({ (48...57).contains($0) }) else { throw .invalidContentLength }
        return digits.reduce(0) { $0 * 10 + Int($1 - 48) }
    }

    // tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
    //   (RFC 9110 §5.6.2)
    package static func isTokenChar(_ byte: UInt8) -> Bool {
        switch byte {
        case 48...57, 65...90, 97...122: true
        case 33, 35, 36, 37, 38, 39, 42, 43, 45, 46, 94, 95, 96, 124, 126: true
        default: false
        }
    }
}
