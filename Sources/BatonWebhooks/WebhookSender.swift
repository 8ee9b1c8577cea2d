import BatonCore
import BatonStorage
import CCurl
import Foundation

/// Sends one endpoint's signed deliveries with libcurl's easy interface, blocking the calling
/// thread (the endpoint's own delivery thread) for at most `timeout` per attempt. One handle
/// per endpoint, so the receiver's connection is kept open between events. Not FoundationNetworking's
/// URLSession: with an attempt waiting on a receiver that never answers, its dispatch threads
/// spin (most of a CPU on Linux, docs/benchmarks.md), which slowed logins and exchanges.
final class WebhookSender {
    /// curl_global_init, once per process, before the first handle.
    private static let initialized = baton_curl_global_init() != 0

    private let curl: UnsafeMutableRawPointer?
    private let timeout: Duration
    private let stop: StopFlag
    private let caFile: String?

    /// A sender whose attempts end after `timeout`, or soon after `stop` is raised; HTTPS
    /// receivers' certificates are verified against `caFile` (PEM) when given, else the system's.
    init(timeout: Duration, stop: StopFlag, caFile: String? = nil) {
        curl = Self.initialized ? curl_easy_init() : nil
        self.timeout = timeout
        self.stop = stop
        self.caFile = caFile
    }

    deinit { if let curl { curl_easy_cleanup(curl) } }

    /// POSTs `event` to `endpoint`, signed for the time of this attempt: 2xx is delivered,
    /// another status (a redirect included) refused, no answer (a timeout, a refused connection)
    /// a failure with its reason.
    func send(_ event: OutboxEvent, to endpoint: WebhookEndpoint, now: Instant) -> DeliveryOutcome {
        guard let curl else { return .failed("libcurl could not be initialised") }
        let timestamp = now.milliseconds / 1000
        let signature = WebhookSignature.header(messageID: event.messageID, timestamp: timestamp, body: event.body, secrets: endpoint.secrets)
        var headers: UnsafeMutablePointer<curl_slist>?
        for header in ["Content-Type: application/json", "User-Agent: Baton-Webhooks/1", "Expect:", "webhook-id: \(event.messageID)",
                       "webhook-timestamp: \(timestamp)", "webhook-signature: \(signature)"] {
            headers = curl_slist_append(headers, header)
        }
        defer { curl_slist_free_all(headers) }
        var status = 0
        var error = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let body = Array(event.body.utf8)
        let code = body.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                baton_curl_post(curl, endpoint.url, chars.baseAddress, chars.count, headers, caFile,
                                Int(timeout.wholeMilliseconds), stop.pointer, &status, &error)
            }
        }
        guard code == 0 else {
            if stop.isRaised { return .failed("stopped before an answer (baton serve was stopping)") }
            let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return .failed(message.isEmpty ? "libcurl error \(code)" : message)
        }
        return (200..<300).contains(status) ? .delivered : .refused(status: status)
    }
}

/// A flag the delivery threads' transfers watch: raised, an attempt in flight ends within about
/// a second instead of waiting out its timeout (`baton serve` stopping).
final class StopFlag: @unchecked Sendable {
    /// Written only through `raise` (an atomic store in C) and read by libcurl's progress function.
    let pointer: UnsafeMutablePointer<Int32>

    init() {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: 0)
    }

    deinit { pointer.deallocate() }

    func raise() { baton_curl_raise(pointer) }

    var isRaised: Bool { baton_curl_raised(pointer) != 0 }
}
