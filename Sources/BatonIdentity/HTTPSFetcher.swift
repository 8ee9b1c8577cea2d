import CCurl

/// A GET over HTTPS only, with libcurl's easy interface: the discovery document and the JWK
/// Set of an identity provider. No redirects, no other scheme, the certificate verified
/// (against the issuer's own CA certificates when it has them), the whole attempt bounded in
/// time and the answer in size. It blocks the calling thread, a worker's, never an event loop's.
package struct HTTPSFetcher: Sendable {
    /// What came back: the body and its `Cache-Control`.
    package struct Answer: Sendable {
        package let body: [UInt8]
        package let cacheControl: String?
    }

    /// curl_global_init, once per process, before the first handle.
    private static let initialized = baton_curl_global_init() != 0

    /// The longest an attempt (connection and answer) may take.
    package var timeout: Duration
    /// The largest answer accepted, in bytes.
    package var maximumSize: Int

    package static let defaultTimeout: Duration = .seconds(5)
    package static let defaultMaximumSize = 256 * 1024

    package init(timeout: Duration = defaultTimeout, maximumSize: Int = defaultMaximumSize) {
        self.timeout = timeout
        self.maximumSize = maximumSize
    }

    /// GETs `url`, which must be `https`.
    /// - Throws: `.fetchFailed` naming the URL and what went wrong.
    package func get(_ url: String, caPEM: String?) throws(KeySetError) -> Answer {
        guard url.lowercased().hasPrefix("https://") else { throw .fetchFailed("\(url) is not an https URL") }
        guard Self.initialized, let curl = curl_easy_init() else { throw .fetchFailed("libcurl could not be initialised") }
        defer { curl_easy_cleanup(curl) }
        var body = baton_curl_body()
        body.limit = maximumSize
        defer { free(body.data) }
        var status = 0
        var error = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let milliseconds = Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let code: Int32
        if let caPEM {
            let pem = Array(caPEM.utf8)
            code = pem.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { chars in
                    baton_curl_get_https(curl, url, chars.baseAddress, chars.count, milliseconds, &body, &status, &error)
                }
            }
        } else {
            code = baton_curl_get_https(curl, url, nil, 0, milliseconds, &body, &status, &error)
        }
        if body.too_large != 0 { throw .fetchFailed("\(url) answered more than \(maximumSize) bytes") }
        guard code == 0 else {
            let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw .fetchFailed("\(url): \(message.isEmpty ? "libcurl error \(code)" : message)")
        }
        guard status == 200 else { throw .fetchFailed("\(url) answered HTTP \(status)") }
        let bytes = body.data.map { Array(UnsafeRawBufferPointer(start: $0, count: body.length)) } ?? []
        let cacheControl = withUnsafeBytes(of: body.cache_control) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return Answer(body: bytes, cacheControl: cacheControl.isEmpty ? nil : cacheControl)
    }
}
