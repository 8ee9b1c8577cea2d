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
        // Over the raw buffer: every byte of every request passes through here (verify's path),
        // and an ArraySlice checks its bounds on each subscript.
        try bytes.withUnsafeBufferPointer { buffer throws(HTTPParseError) in try parse(buffer, limits: limits) }
    }

    /// `parse` over the buffer's bytes; `consumed` counts from its start.
    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>, limits: Limits) throws(HTTPParseError) -> ParseResult {
        var start = 0
        let count = bytes.count
        // RFC 9112 §2.2: a server SHOULD ignore at least one empty line received before the request-line.
        while count - start >= 2, bytes[start] == cr, bytes[start + 1] == lf { start += 2 }
        if count - start == 1, bytes[start] == cr { return .needMoreData }  // half of an empty line
        // One pass checks the bytes and finds the empty line that ends the head. The checks come
        // first, so that the answer does not depend on how the bytes were split into reads (the
        // fuzz test feeds them in random chunks). After them, every CR in the head is followed
        // by LF and every LF preceded by CR.
        let scan = try scanHead(bytes, from: start)
        guard let headEnd = scan.headEnd, headEnd - start <= limits.maxHeadBytes else {
            // No end within the limit: every byte so far must still be a valid prefix.
            if scan.headEnd != nil { _ = try scanHead(bytes, from: start, pastHeadEnd: true) }
            if count - start > limits.maxHeadBytes { throw .headersTooLarge }
            return .needMoreData
        }
        let lineCount = scan.lines
        // One pass over the head, line by line, without an array of lines (verify runs this
        // for every request).
        let requestLineEnd = lineEnd(bytes, from: start, headEnd: headEnd)
        var request = try parseRequestLine(UnsafeBufferPointer(rebasing: bytes[start..<requestLineEnd]))
        guard lineCount - 1 <= limits.maxHeaderCount else { throw .tooManyHeaders }
        request.headers.reserveCapacity(lineCount - 1)
        var lineStart = requestLineEnd + 2
        while lineStart < headEnd + 2 {
            let end = lineEnd(bytes, from: lineStart, headEnd: headEnd)
            request.headers.append(try parseHeaderLine(UnsafeBufferPointer(rebasing: bytes[lineStart..<end])))
            lineStart = end + 2
        }
        let length = try bodyLength(request)
        guard length <= limits.maxBodyBytes else { throw .bodyTooLarge }
        let bodyStart = headEnd + 4
        guard count - bodyStart >= length else { return .needMoreData }
        if length > 0 { request.body = Array(UnsafeBufferPointer(rebasing: bytes[bodyStart..<bodyStart + length])) }
        return .complete(request, consumed: bodyStart + length)
    }

    // MARK: - Pieces

    private static let cr: UInt8 = 13
    private static let lf: UInt8 = 10

    /// Rejects the bytes from `start` as soon as one can never be valid (so that a garbage
    /// stream is answered at once instead of waiting for the limit or the timeout), and finds
    /// the empty line that ends the head, where it stops unless `pastHeadEnd`.
    /// - Returns: the index of the CR of the CRLFCRLF that ends the head, nil if none yet (or
    ///   with `pastHeadEnd`), and the number of lines before it (the request line and the headers).
    private static func scanHead(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, pastHeadEnd: Bool = false) throws(HTTPParseError) -> (headEnd: Int?, lines: Int) {
        var index = start
        var lines = 0
        var lineStart = start
        let end = bytes.count
        if index < end, bytes[index] != cr, !isTokenChar(bytes[index]) { throw .malformedRequestLine }
        while index < end {
            let byte = bytes[index]
            if byte > cr {  // the usual byte: only a line's first may be wrong (obs-fold)
                if index == lineStart, lines > 0, byte == 32 { throw .obsoleteLineFolding }
                index += 1
                continue
            }
            // A bad byte in the request line makes a malformed request line; later, a bad value.
            let badByte: HTTPParseError = lines == 0 ? .malformedRequestLine : .invalidHeaderValue
            if byte == cr {
                if index + 1 < end, bytes[index + 1] != lf { throw badByte }  // bare CR
            } else if byte == lf {
                if index == start || bytes[index - 1] != cr { throw badByte }  // bare LF
                if index - 1 == lineStart, lines > 0, !pastHeadEnd { return (index - 3, lines) }  // the empty line
                lines += 1
                lineStart = index + 1
            } else if byte == 0 {
                throw badByte
            } else if index == lineStart, lines > 0, byte == 9 {
                throw .obsoleteLineFolding
            }
            index += 1
        }
        return (nil, lines)
    }

    /// Index of the CR that ends the line starting at `from` (at most `headEnd`, the CR of the
    /// head's final CRLFCRLF). The head was validated: every CR in it starts a CRLF.
    private static func lineEnd(_ bytes: UnsafeBufferPointer<UInt8>, from: Int, headEnd: Int) -> Int {
        var index = from
        while index < headEnd, bytes[index] != cr { index += 1 }
        return index
    }

    // request-line = method SP request-target SP HTTP-version   (RFC 9112 §3)
    // method = token; HTTP-version = "HTTP/" DIGIT "." DIGIT
    private static func parseRequestLine(_ line: UnsafeBufferPointer<UInt8>) throws(HTTPParseError) -> HTTPRequest {
        guard let firstSpace = line.firstIndex(of: 32),
              let secondSpace = line[(firstSpace + 1)...].firstIndex(of: 32)
        else { throw .malformedRequestLine }
        let method = line[line.startIndex..<firstSpace]
        let target = line[(firstSpace + 1)..<secondSpace]
        let version = line[(secondSpace + 1)...]
        guard !method.isEmpty, method.allSatisfy(isTokenChar), !target.isEmpty, target.allSatisfy({ $0 > 32 && $0 < 127 })
        else { throw .malformedRequestLine }
        let v = version.startIndex
        guard version.count == 8, version[v..<v + 5].elementsEqual("HTTP/".utf8), version[v + 6] == 46,
              (48...57).contains(version[v + 5]), (48...57).contains(version[v + 7])
        else { throw .malformedRequestLine }
        guard version[v + 5] == 49, version[v + 7] == 48 || version[v + 7] == 49 else { throw .unsupportedVersion }
        // origin-form only ("/path?query"), or "*" for OPTIONS; absolute-form is for proxies.
        guard target.first == 47 || (target.count == 1 && target.first == 42) else { throw .malformedRequestLine }
        return HTTPRequest(method: text(method), target: text(target),
                           minorVersion: Int(version[v + 7] - 48))
    }

    // field-line = field-name ":" OWS field-value OWS   (RFC 9112 §5)
    // field-name = token; no whitespace is allowed between the field name and colon (§5.1).
    // field-value = *field-content; field-vchar = VCHAR / obs-text; SP and HTAB inside.
    // obs-fold (a line starting with SP/HTAB) is rejected (§5.2).
    private static func parseHeaderLine(_ line: UnsafeBufferPointer<UInt8>) throws(HTTPParseError) -> (name: String, value: String) {
        guard let first = line.first else { throw .invalidHeaderName }
        if first == 32 || first == 9 { throw .obsoleteLineFolding }
        guard let colon = line.firstIndex(of: 58) else { throw .invalidHeaderName }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty, name.allSatisfy(isTokenChar) else { throw .invalidHeaderName }
        var valueStart = colon + 1
        var valueEnd = line.endIndex
        while valueStart < valueEnd, line[valueStart] == 32 || line[valueStart] == 9 { valueStart += 1 }
        while valueEnd > valueStart, line[valueEnd - 1] == 32 || line[valueEnd - 1] == 9 { valueEnd -= 1 }
        let value = line[valueStart..<valueEnd]
        guard value.allSatisfy({ $0 == 9 || ($0 >= 32 && $0 != 127) }) else { throw .invalidHeaderValue }
        return (lowercased(name), text(value))
    }

    /// The bytes as a String, from contiguous memory (a `Slice` would be copied byte by byte).
    private static func text(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes), as: UTF8.self)
    }

    /// A token's text in lowercase (ASCII only: a token has no other letters), without going
    /// through `String.lowercased()`'s Unicode machinery.
    private static func lowercased(_ name: Slice<UnsafeBufferPointer<UInt8>>) -> String {
        guard name.contains(where: { $0 >= 65 && $0 <= 90 }) else { return text(name) }
        return String(unsafeUninitializedCapacity: name.count) { buffer in
            for (offset, byte) in name.enumerated() { buffer[offset] = byte >= 65 && byte <= 90 ? byte + 32 : byte }
            return name.count
        }
    }

    /// The body length from the headers (RFC 9112 §6.3), with the smuggling defences.
    private static func bodyLength(_ request: HTTPRequest) throws(HTTPParseError) -> Int {
        var length: String?
        var lengths = 0
        var hosts = 0
        var hasTransferEncoding = false
        for (name, value) in request.headers {
            switch name {
            case "content-length":
                if lengths == 0 { length = value }
                lengths += 1
            case "transfer-encoding": hasTransferEncoding = true
            case "host": hosts += 1
            default: break
            }
        }
        if hasTransferEncoding { throw lengths == 0 ? .transferEncodingNotSupported : .contentLengthWithTransferEncoding }
        if hosts > 1 { throw .duplicateHost }
        if hosts == 0, request.minorVersion == 1 { throw .missingHost }
        guard let length else { return 0 }
        guard lengths == 1 else { throw .duplicateContentLength }
        // Content-Length = 1*DIGIT; at most 10 digits so the value cannot overflow.
        let digits = length.utf8
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
