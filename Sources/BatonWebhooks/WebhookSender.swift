import BatonCore
import BatonStorage
import BatonSync
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends one signed delivery with URLSession (FoundationNetworking: libcurl, certificate
/// verification on) and waits for the answer at most `timeout`.
final class WebhookSender: Sendable {
    private let session: URLSession
    private let timeout: Duration

    init(timeout: Duration) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = Double(timeout.wholeMilliseconds) / 1000
        configuration.timeoutIntervalForResource = Double(timeout.wholeMilliseconds) / 1000
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        configuration.httpMaximumConnectionsPerHost = 1
        session = URLSession(configuration: configuration)
        self.timeout = timeout
    }

    /// POSTs `event` to `endpoint`, signed for the time of this attempt: 2xx is delivered,
    /// anything else (status, timeout, connection refused) a failure with its reason.
    func send(_ event: OutboxEvent, to endpoint: WebhookEndpoint, now: Instant) -> DeliveryOutcome {
        guard let url = URL(string: endpoint.url) else { return .failed("invalid URL") }
        let timestamp = now.milliseconds / 1000
        var request = URLRequest(url: url, timeoutInterval: Double(timeout.wholeMilliseconds) / 1000)
        request.httpMethod = "POST"
        request.httpBody = Data(event.body.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Baton-Webhooks/1", forHTTPHeaderField: "User-Agent")
        request.setValue(event.messageID, forHTTPHeaderField: "webhook-id")
        request.setValue(String(timestamp), forHTTPHeaderField: "webhook-timestamp")
        request.setValue(WebhookSignature.header(messageID: event.messageID, timestamp: timestamp, body: event.body, secret: endpoint.secret),
                         forHTTPHeaderField: "webhook-signature")
        let result = Locked<DeliveryOutcome>(.failed("no answer"))
        let done = DispatchSemaphore(value: 0)
        let task = session.dataTask(with: request) { _, response, error in
            if let error {
                result.withLock { $0 = .failed(error.localizedDescription) }
            } else if let status = (response as? HTTPURLResponse)?.statusCode {
                result.withLock { $0 = (200..<300).contains(status) ? .delivered : .failed("HTTP \(status)") }
            }
            done.signal()
        }
        task.resume()
        // URLSession enforces the timeout; this bound only guards against a task that never ends.
        if done.wait(timeout: .now() + .milliseconds(Int(timeout.wholeMilliseconds) + 5000)) == .timedOut {
            task.cancel()
            return .failed("timed out")
        }
        return result.withLock { $0 }
    }

    func close() { session.invalidateAndCancel() }
}
