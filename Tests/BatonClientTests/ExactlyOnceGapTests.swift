@testable import BatonClient
import BatonTestSupport
import Foundation
import Testing

/// The three logouts of issue 41, each reproduced against the real server: an abandoned
/// attempt committed after its retry (a relay holds it), a successor the store could not save
/// followed by the end of the process, and a relaunch after a process died holding the claim;
/// and the attempt baton-sim found sent without its claim renewed in the store.
@Suite(.ownThreads) struct ExactlyOnceGapTests {
    /// R3b. The first attempt is held on its way until the retry has been answered and stored;
    /// then it reaches the server. Before attempt numbers the server took it as the retry's
    /// retry (R3a) and replaced the successor the client held: its next request was a fork.
    @Test func anAbandonedAttemptCommittedAfterItsRetryDoesNotReplaceTheSuccessor() async throws {
        let server = try startServer()
        let relay = try TCPRelay(to: server.port, fault: .holdRequest)
        defer { relay.close() }
        // The client's clock is left alone (its DPoP proofs' iat must be right for the held
        // attempt to reach the rules); the app asks for the exchange, as at launch.
        let session = makeSession(URL(string: "http://127.0.0.1:\(relay.port)")!, exchangeTimeout: .milliseconds(500))
        try await session.loginAlice()
        let events = EventRecorder(session)

        #expect(await session.restore(exchangeNow: true) == .loggedIn(chainID: try #require(await session.chainID), generation: 1))
        #expect(try await session.get("/v1/verify") == 200)  // the retry's successor, stored and used
        #expect(relay.faultedAnswers == 1)
        let successor = try #require(await session.token)
        relay.release()
        let late = relay.awaitHeldAnswer()
        #expect(late?.hasPrefix("HTTP/1.1 409") == true, "\(late ?? "no answer")")  // exchange_attempt_superseded
        #expect(try await session.get("/v1/verify") == 200)
        #expect(await session.token == successor)
        let kinds = try server.auditKinds()
        #expect(!kinds.contains("fork_detected") && !kinds.contains("chain_revoked"), "\(kinds)")
        #expect(!events.events.contains { if case .loginRequired = $0 { true } else { false } })
    }

    /// The store refuses the successor. It is never presented; the process then ends (the
    /// session is released, as iOS ends apps) and the relaunch, on the same store, exchanges the
    /// older token again: the server's lost-response retry gives it a fresh successor. Before,
    /// the unsaved successor was presented, so the relaunch's exchange was reuse.
    @Test func aSuccessorTheStoreRefusedIsNeverPresentedAndTheRelaunchRecoversIt() async throws {
        let server = try startServer()
        let store = FlakyStore()
        let clock = TestClock()
        var session: BatonSession? = makeSession(server.baseURL, store: store, clock: clock, exchangeTimeout: countedCallsExchangeTimeout)
        try await session!.loginAlice()
        let login = try #require(store.contents?.bundle)
        clock.advance(by: pastTheLifetime)
        // The exchange's claim is saved; its successor is not, nor anything after it (the
        // background tries included) while this process lives.
        store.failSaves(1000, after: 1)

        await #expect(throws: BatonClientError.self) { try await session!.get("/v1/verify") }
        #expect(store.contents?.bundle?.token == login.token)
        #expect(await session!.token == login.token)  // the successor was not adopted unsaved
        session = nil  // the process ends
        store.failSaves(0)

        let relaunched = makeSession(server.baseURL, store: store, clock: clock)
        #expect(try await relaunched.get("/v1/verify") == 200)
        #expect(await relaunched.generation == 1)
        #expect(store.contents?.bundle?.token == (await relaunched.token))
        let kinds = try server.auditKinds()
        #expect(kinds.contains("exchange_retried"), "\(kinds)")
        #expect(!kinds.contains("reuse_detected") && !kinds.contains("chain_revoked"), "\(kinds)")
    }

    /// A refused successor kept by a process that goes on is saved at its next call and used
    /// then, without a second exchange.
    @Test func aSuccessorTheStoreRefusedIsSavedAtTheNextCallThenUsed() async throws {
        let server = try startServer()
        let store = FlakyStore()
        let clock = TestClock()
        let session = makeSession(server.baseURL, store: store, clock: clock, exchangeTimeout: countedCallsExchangeTimeout)
        try await session.loginAlice()
        clock.advance(by: pastTheLifetime)
        store.failSaves(1, after: 1)
        await #expect(throws: BatonClientError.self) { try await session.get("/v1/verify") }
        #expect(try await session.get("/v1/verify") == 200)
        #expect(await session.generation == 1)
        #expect(store.contents?.bundle?.generation == 1)
        #expect(try server.exchangeCount() == 1)
        #expect(try server.exchangeCount(kind: "retried") == 0)
    }

    /// The claim is stored before the first attempt; then the first two answers are lost and
    /// every renewal of the claim fails to save. One attempt goes out numbered just above the
    /// stored number (a takeover would number its own no lower: equal numbers are safe, R3b);
    /// no further one while the store holds no number for it: a process sharing the store that
    /// took the claim over would number its attempt below it, and this one, arriving after it,
    /// would replace the successor the takeover stores (baton-sim seed 2165139018237: a fork, the
    /// app and the extension logged out). The exchange fails with the store's error; once the
    /// store takes writes again, the next call's attempt is the server's lost-response retry.
    @Test func noSecondAttemptGoesOutWhileTheClaimCannotBeRenewed() async throws {
        let (server, relay, store, session) = try await exchangeWhoseRenewalsFail(lost: [1, 2])
        defer { relay.close() }

        await #expect(throws: BatonClientError.store("disk full")) { try await session.get("/v1/verify") }
        #expect(relay.faultedAttempts.contains(2))
        #expect(try server.exchangeCount() == 1)
        // Attempt 2 (one above the stored 1) replaced attempt 1's successor; the build before
        // also sent attempt 3, numbered above anything the store held.
        #expect(try server.exchangeCount(kind: "retried") == 1)
        #expect(store.contents?.claim?.lastAttempt == 1)

        store.failSaves(0)
        #expect(try await session.get("/v1/verify") == 200)
        #expect(try server.exchangeCount(kind: "retried") == 2)
        #expect(store.contents?.bundle?.token == (await session.token))
        let kinds = try server.auditKinds()
        #expect(!kinds.contains("reuse_detected") && !kinds.contains("chain_revoked"), "\(kinds)")
    }

    /// The first answer is lost and no renewal can be saved: the one attempt allowed beyond the
    /// stored number is the lost answer's retry within the grace, and its successor, which the
    /// store refuses too, is kept unused and saved at the next call, without another exchange.
    @Test func aLostAnswerGetsItsRetryAlthoughNoRenewalCanBeSaved() async throws {
        let (server, relay, store, session) = try await exchangeWhoseRenewalsFail(lost: [1])
        defer { relay.close() }

        await #expect(throws: BatonClientError.store("disk full")) { try await session.get("/v1/verify") }
        #expect(try server.exchangeCount(kind: "retried") == 1)  // no attempt at all after a refused renewal: 0

        store.failSaves(0)
        #expect(try await session.get("/v1/verify") == 200)
        #expect(try server.exchangeCount(kind: "retried") == 1)
        #expect(await session.generation == 1)
        #expect(store.contents?.bundle?.token == (await session.token))
    }

    /// The first answer is lost, and no renewal of the claim can be saved: the second attempt
    /// goes out numbered one above the stored number, its answer comes 2 s late, after its
    /// deadline, and no third attempt may go out. The exchange goes on listening to the second,
    /// whose answer is the chain's head: its successor is kept (the store refuses it too) and
    /// saved at the next call, with no further exchange. The build before threw that answer
    /// away at its deadline; its next exchange came with the head already made, and on a Bearer
    /// chain after the retry grace that is reuse (baton-sim seed 215745220614506: the extension
    /// logged out). Whatever the machine's load, the second attempt's answer is the one used.
    @Test func theLastAttemptSentIsListenedToWhenNoFurtherAttemptMayGoOut() async throws {
        let (server, relay, store, session) = try await exchangeWhoseRenewalsFail(lost: [1], late: [2: 2])
        defer { relay.close() }

        await #expect(throws: BatonClientError.store("disk full")) { try await session.get("/v1/verify") }
        #expect(relay.faultedAttempts.contains(2))  // its answer came 2 s late
        #expect(try server.exchangeCount(kind: "retried") == 1)  // attempt 2 replaced attempt 1's successor

        store.failSaves(0)
        #expect(try await session.get("/v1/verify") == 200)
        #expect(try server.exchangeCount() == 1)
        #expect(try server.exchangeCount(kind: "retried") == 1)  // attempt 2's successor is the one used
        #expect(await session.generation == 1)
        #expect(store.contents?.bundle?.token == (await session.token))
        let kinds = try server.auditKinds()
        #expect(!kinds.contains("reuse_detected") && !kinds.contains("chain_revoked"), "\(kinds)")
    }

    /// As above, but the first answer is not lost on the way with a closed connection: it never
    /// comes (the relay holds it), so the client gives the first attempt up at its 500 ms
    /// deadline and cancels it when the second goes out (the path a loaded CI machine once took
    /// in the test above, with a slow server, before its relay faulted answers by attempt
    /// number). The second attempt's answer, 2 s late, is still the one listened to and used.
    @Test func theLastAttemptIsListenedToAlsoWhenTheFirstWasGivenUpAtItsDeadline() async throws {
        let (server, relay, store, session) = try await exchangeWhoseRenewalsFail(lost: [], stalled: [1], late: [2: 2])
        defer { relay.close() }

        await #expect(throws: BatonClientError.store("disk full")) { try await session.get("/v1/verify") }
        #expect(relay.faultedAttempts.contains(2))  // its answer came 2 s late
        #expect(try server.exchangeCount(kind: "retried") == 1)

        store.failSaves(0)
        #expect(try await session.get("/v1/verify") == 200)
        #expect(try server.exchangeCount() == 1)
        #expect(try server.exchangeCount(kind: "retried") == 1)  // attempt 2's successor is the one used
        #expect(store.contents?.bundle?.token == (await session.token))
        let kinds = try server.auditKinds()
        #expect(!kinds.contains("reuse_detected") && !kinds.contains("chain_revoked"), "\(kinds)")
    }

    /// The first answer is lost, no renewal of the claim can be saved, and the second attempt
    /// reaches the server twice: a copy first, which commits, then the request itself (as when
    /// libcurl resends a request whose reused connection died before any answer byte). The
    /// request's answer, `exchange_attempt_superseded`, comes 8 s late, while the last slot
    /// listens with no attempt allowed, and no later slot fits the 10 s grace (an extra slot
    /// needs its 1 s pause to end 1 s before the grace does; an earlier 409 would be followed by
    /// one, which the store refuses again: its error would be the last). It asks for a
    /// retry the store does not allow, so the exchange fails with the store's error, the reason
    /// it ends; the build before reported the 409. The project's CI of 26021f0 met that in
    /// `noSecondAttemptGoesOutWhileTheClaimCannotBeRenewed` on a loaded machine: libcurl resent
    /// the attempt whose answer the relay dropped, and the resend's 409 came after the
    /// deadline, as the grace ran out. The next call's attempt, numbered above the head's, is
    /// the server's lost-response retry, within the grace of the copy's commit (about 2 s left).
    @Test func aLateAnswerAskingForARetryTheStoreForbidsEndsWithTheStoresError() async throws {
        let (server, relay, store, session) = try await exchangeWhoseRenewalsFail(lost: [1], late: [2: 8], duplicated: [2])
        defer { relay.close() }

        await #expect(throws: BatonClientError.store("disk full")) { try await session.get("/v1/verify") }
        #expect(relay.faultedAttempts.contains(2))  // its own answer, the 409, came 8 s late
        #expect(try server.exchangeCount(kind: "retried") == 1)  // the copy replaced attempt 1's successor

        store.failSaves(0)
        #expect(try await session.get("/v1/verify") == 200)
        #expect(try server.exchangeCount() == 1)
        #expect(try server.exchangeCount(kind: "retried") == 2)
        #expect(store.contents?.bundle?.token == (await session.token))
        let kinds = try server.auditKinds()
        #expect(!kinds.contains("reuse_detected") && !kinds.contains("chain_revoked"), "\(kinds)")
    }

    /// A session due for an exchange through a relay that loses the answers to the exchange
    /// attempts numbered in `lost`, holds those in `stalled`, delays those in `late` and
    /// duplicates those in `duplicated` (by their number, so that an
    /// attempt the client gave up at its deadline on a loaded machine, whose answer then never
    /// reaches the relay, does not pass its fault to the next answer), on a store that stores its
    /// first claim and refuses every write after it (the renewals, the successor) until the test
    /// says otherwise. The caller closes the relay.
    private func exchangeWhoseRenewalsFail(lost: Set<Int>, stalled: Set<Int> = [], late: [Int: TimeInterval] = [:],
                                           duplicated: Set<Int> = [])
        async throws -> (ServerProcess, TCPRelay, FlakyStore, BatonSession) {
        let server = try startServer()
        let relay = try TCPRelay(to: server.port, fault: .byAttempt(lost: lost, stalled: stalled, late: late, duplicated: duplicated))
        let store = FlakyStore()
        let session = try await sessionDueForAnExchange(through: relay, store: store, exchangeTimeout: .milliseconds(500))
        store.failSaves(1000, after: 1)
        return (server, relay, store, session)
    }

    /// A claim left by a process that died mid-exchange (its pid no longer runs), with a long
    /// lease: the relaunch takes it over at once instead of waiting out the lease.
    @Test func aDeadProcesssClaimDoesNotStallTheRelaunch() async throws {
        let server = try startServer()
        let store = MemoryCredentialStore()
        let clock = TestClock()
        try await makeSession(server.baseURL, store: store, clock: clock).loginAlice()
        var stored = try #require(try store.load())
        let bundle = try #require(stored.bundle)
        let child = ChildProcess()
        child.executableURL = URL(fileURLWithPath: "/bin/true")
        try child.run()
        child.waitUntilExit()
        let dead = child.processIdentifier  // exited and reaped: no process has this pid now
        stored.claim = ExchangeClaim(owner: "the-killed-launch", chainID: bundle.chainID, generation: bundle.generation,
                                     startedAt: Date(), lease: 600, renewedAtUptime: DeviceUptime.now(),
                                     firstClaimedAtUptime: DeviceUptime.now(),
                                     ownerProcess: ClaimOwner(pid: dead, processName: "BatonApp", launch: "killed"), lastAttempt: 1)
        try store.save(stored)
        clock.advance(by: pastTheLifetime)

        let relaunched = makeSession(server.baseURL, store: store, clock: clock)
        let started = ContinuousClock.now
        #expect(try await relaunched.get("/v1/verify") == 200)
        #expect(ContinuousClock.now - started < .seconds(300))  // the lease was 600 s
        #expect(await relaunched.generation == 1)
    }
}
