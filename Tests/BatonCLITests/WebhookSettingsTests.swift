@testable import BatonCLI
import BatonCore
import BatonStorage
import Testing

/// `baton serve`'s webhook options, paired by position, and the retry decision they feed.
struct WebhookSettingsTests {
    @Test func eachWebhookTakesTheSecretFileAndEventsAtItsPosition() throws {
        let settings = try ServeCommand.webhookSettings(
            ["https://a.example/hook", "http://127.0.0.1:9/in"], secretFiles: ["/s/a", "/s/b"],
            events: ["all", "token.reuse_detected,chain.revoked"])
        #expect(settings == [
            .init(url: "https://a.example/hook", secretFile: "/s/a", types: []),
            .init(url: "http://127.0.0.1:9/in", secretFile: "/s/b", types: [.reuseDetected, .chainRevoked]),
        ])
    }

    @Test(arguments: [
        (["https://a.example"], [String](), [String](), "Each --webhook needs its own --webhook-secret-file, in the same order (1 --webhook, 0 --webhook-secret-file)."),
        (["https://a.example", "https://b.example"], ["/a", "/b"], ["all"], "--webhook-events is given for every --webhook or for none, in the same order (2 --webhook, 1 --webhook-events)."),
        (["ftp://a.example"], ["/a"], [], "Invalid value 'ftp://a.example' for '--webhook <url>': expected an http:// or https:// URL."),
        (["https://a.example", "https://a.example"], ["/a", "/b"], [], "--webhook https://a.example is given twice."),
    ])
    func badWebhookOptionsAreNamed(urls: [String], secrets: [String], events: [String], message: String) {
        #expect(throws: UsageError(message: message)) { try ServeCommand.webhookSettings(urls, secretFiles: secrets, events: events) }
    }

    /// Issue 32 (3): the packaged service takes its settings from the environment, webhooks too.
    @Test func theWebhookVariablesSeparateEndpointsWithSpacesAndPairThemByPosition() throws {
        let settings = try ServeCommand.settings([], environment: [
            "BATON_WEBHOOK": "https://a.example/hook?x=1,2  http://127.0.0.1:9/in",
            "BATON_WEBHOOK_SECRET_FILE": "/run/credentials/baton.service/a.secret\n/run/credentials/baton.service/b.secret",
            "BATON_WEBHOOK_EVENTS": "all token.reuse_detected,chain.revoked",
            "BATON_WEBHOOK_TIMEOUT": "5s",
        ])
        #expect(settings.webhooks == [
            .init(url: "https://a.example/hook?x=1,2", secretFile: "/run/credentials/baton.service/a.secret", types: []),
            .init(url: "http://127.0.0.1:9/in", secretFile: "/run/credentials/baton.service/b.secret", types: [.reuseDetected, .chainRevoked]),
        ])
        #expect(settings.webhookTimeout == .seconds(5))
    }

    @Test func webhookOptionsOnTheCommandLineLeaveTheWebhookVariablesUnread() throws {
        let settings = try ServeCommand.settings(["--webhook", "https://c.example/in", "--webhook-secret-file", "/c"], environment: [
            "BATON_WEBHOOK": "https://a.example/hook", "BATON_WEBHOOK_SECRET_FILE": "/a", "BATON_WEBHOOK_EVENTS": "chain.revoked",
        ])
        #expect(settings.webhooks == [.init(url: "https://c.example/in", secretFile: "/c", types: [])])
    }

    @Test func aMismatchInTheWebhookVariablesNamesTheVariables() {
        #expect(throws: UsageError(message: "Each BATON_WEBHOOK value needs its own BATON_WEBHOOK_SECRET_FILE value, in the same order (2 in BATON_WEBHOOK, 1 in BATON_WEBHOOK_SECRET_FILE).")) {
            try ServeCommand.settings([], environment: ["BATON_WEBHOOK": "https://a.example https://b.example", "BATON_WEBHOOK_SECRET_FILE": "/a"])
        }
        #expect(throws: UsageError(message: "Invalid value 'ftp://a.example' for BATON_WEBHOOK: expected an http:// or https:// URL.")) {
            try ServeCommand.settings([], environment: ["BATON_WEBHOOK": "ftp://a.example", "BATON_WEBHOOK_SECRET_FILE": "/a"])
        }
        #expect(Environment.unknownVariables(in: ["BATON_WEBHOOK": "x", "BATON_WEBHOOK_SECRET_FILE": "y", "BATON_WEBHOOK_EVENTS": "all"],
                                             known: Environment.knownVariables).isEmpty)
    }

    @Test func anUnknownEventTypeListsTheKnownOnes() {
        #expect(throws: UsageError.self) { try ServeCommand.webhookSettings(["https://a.example"], secretFiles: ["/a"], events: ["login.new_devices"]) }
        do {
            _ = try ServeCommand.webhookSettings(["https://a.example"], secretFiles: ["/a"], events: ["login.new_devices"])
        } catch {
            #expect(error.message.contains("unknown event type 'login.new_devices'") && error.message.contains("login.new_device,"))
        }
    }

    @Test func backoffDoublesUpToTheMaximumAndGivesUpAfterThePeriod() {
        var retry = RetryPolicy()
        retry.initialDelay = .seconds(5)
        retry.maximumDelay = .seconds(60)
        retry.period = .seconds(3600)
        #expect((1...6).map { retry.delay(afterAttempts: $0) } == [.seconds(5), .seconds(10), .seconds(20), .seconds(40), .seconds(60), .seconds(60)])
        let entry = OutboxEntry(id: 9, event: OutboxEvent(messageID: "msg_x", type: .chainRevoked, at: Instant(milliseconds: 0), body: "{}"))
        var pending = PendingDelivery(endpoint: "https://a.example", entry: entry, dueAt: Instant(milliseconds: 0))
        pending.leaseID = "lease"
        let start = Instant(milliseconds: 1_000_000)
        let failed = retry.pending(after: .refused(status: 500), of: pending, now: start)
        #expect(failed?.attempts == 1 && failed?.dueAt == start + .seconds(5) && failed?.leaseID == nil && failed?.firstFailedAt == start)
        let later = failed.flatMap { retry.pending(after: .failed("timed out"), of: $0, now: start + .seconds(3599)) }
        #expect(later?.attempts == 2 && later?.firstFailedAt == start && later?.dueAt == start + .seconds(3599 + 10))
        // The retry period counts from the event's own first failure: then it is given up.
        #expect(later.flatMap { retry.pending(after: .failed("timed out"), of: $0, now: start + .seconds(3600)) } == nil)
        #expect(later.flatMap { retry.pending(after: .delivered, of: $0, now: start + .seconds(10)) } == nil)
        #expect(DeliveryOutcome.refused(status: 403).reason == "HTTP 403" && DeliveryOutcome.delivered.reason == nil)
    }

    /// The lanes: what any account holder can make by the thousand is bulk; the alerts a
    /// receiver must hear of within seconds are not.
    @Test func securityAlertsHaveTheirOwnLane() {
        #expect(WebhookEventType.allCases.filter { !$0.isAlert } == [.newDeviceLogin, .proofRejected])
    }

    @Test func auditEventsBecomeWebhookEventsWithoutTokens() {
        let chain = ChainID(rawValue: 0x1234)
        let lockout = AuditEvent(kind: .chainRevoked, userID: 3, username: "ada", chainID: chain,
                                 context: RequestContext(ip: "203.0.113.7", userAgent: "App/1", deviceID: "phone"),
                                 detail: ["reason": .string("confirm_failed")])
        let events = OutboxEvent.events(for: lockout, at: Instant(milliseconds: 1_795_495_000_123))
        #expect(events.map(\.type) == [.chainRevoked, .stepUpLockedOut])
        #expect(events[0].body == #"{"data":{"actor":"baton","chain_id":"0000000000001234","client_address":"203.0.113.7","device_id":"phone","occurred_at":"2026-11-24T04:36:40.123Z","reason":"confirm_failed","user_agent":"App/1","user_id":3,"username":"ada"},"timestamp":"2026-11-24T04:36:40.123Z","type":"chain.revoked"}"#)
        #expect(events[0].messageID != events[1].messageID && events[0].messageID.hasPrefix("msg_"))
        #expect(OutboxEvent.events(for: AuditEvent(kind: .exchanged), at: Instant(milliseconds: 0)).isEmpty)
    }
}
