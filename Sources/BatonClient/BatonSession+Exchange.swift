import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension BatonSession {
    /// One exchange of `old`, coordinated with every session sharing the store: claim it in the
    /// store (or adopt what another session stored meanwhile, or wait for its live claim), send
    /// it with the store unlocked, then store the successor before anyone uses it.
    ///
    /// A transport failure (no answer, timeout, reset) and 5xx/429 are retried with the same
    /// token and the same `X-Device-Id` on the configuration's `exchangeSchedule`: short attempts
    /// that all end within the server's retry grace, so the server's lost-response retry (R3a)
    /// turns a repeat of an exchange whose answer was lost or stalled into a fresh successor
    /// instead of reuse. The token is never sent to exchange otherwise.
    ///
    /// A bound (DPoP) chain's attempts carry a fresh proof each and are not cut to the grace
    /// (`boundExchangeSchedule`): the server accepts its retry, proved by the key, as long as
    /// the successor was never presented. A refused proof (the key still held) is retried on the
    /// schedule too: a copy of the attempt used the proof first. A bound chain whose key is gone
    /// cannot be exchanged: `loginRequired(.deviceKeyLost)`.
    func exchangeCoordinated(_ old: TokenBundle) async -> ExchangeOutcome {
        let proofKey: DeviceKey?
        do {
            proofKey = try deviceKeyIfHeld(for: old)
        } catch {
            return .failed(error)  // a key that cannot be read now (locked Keychain) is not lost
        }
        if old.tokenType == .dpop, proofKey == nil {
            return await record(.loginRequired(.deviceKeyLost), of: old, deviceID: deviceID ?? "")
        }
        let claimed: Claimed
        switch await claimExchange(of: old) {
        case .decided(let outcome): return outcome
        case .claimed(let claim): claimed = claim
        }
        let answer = await sendExchange(of: old, claimed: claimed, proofKey: proofKey)
        switch answer {
        case .successor(let successor):
            return await recordSuccessor(successor, of: old, deviceID: claimed.deviceID)
        case .takenOver:
            // Another session took the claim over between two attempts (this process was
            // stopped past its lease): its answer decides, not a further attempt of ours.
            return await outcomeOfTakeover(of: old)
        case .loginRequired, .failed:
            break
        }
        return await record(answer, of: old, deviceID: claimed.deviceID)
    }

    /// Under the store's lock: records `successor` (the server's answer to `old`), unless another
    /// session claimed `old` meanwhile (H1). A claim on `old` that is not this session's means
    /// this process was stopped past its lease and another took over: its retry (R3a) may have
    /// replaced `successor` at the server, and presenting `successor` then is a fork that
    /// revokes the chain. So: a takeover in flight is waited for (unlocked, polled); a token of
    /// the chain it stored at `successor`'s generation or later is adopted; a takeover that
    /// ended without storing one (its claim left expired, never removed: see `record`'s failure
    /// case) leaves `successor` unused and the exchange failed, to be tried again (a fresh
    /// retry within the grace returns the server's current successor). The check and the save
    /// are one locked step, so no takeover can slip in between.
    private func recordSuccessor(_ successor: TokenBundle, of old: TokenBundle, deviceID: String) async -> ExchangeOutcome {
        while true {
            let lock: CredentialStoreLock
            do { lock = try await store.lock() } catch { return keepUnsaved(successor, of: old, deviceID: deviceID, because: error) }
            let stored: StoredCredentials?
            do { stored = try store.load() } catch {
                lock.unlock()
                return keepUnsaved(successor, of: old, deviceID: deviceID, because: error)  // H5: "save pending"
            }
            let head = stored?.bundle
            let storeHoldsOld = head?.token == old.token
            if let head, !storeHoldsOld {
                lock.unlock()
                // Another session stored a token of the chain: the takeover's successor (the same
                // generation) or a later one. Anything else (another login, an older token, no
                // bundle) is not this chain's news: the session goes on with `successor`.
                if head.chainID == successor.chainID, head.generation >= successor.generation, head.token != successor.token,
                   !SimulationMutant.takeoverAdoptsReplacedSuccessor.isActive {
                    unsavedSuccessor = nil
                    return .adopted(head)
                }
                unsavedSuccessor = nil
                return .exchanged(successor)
            }
            if let current = stored, let head, let claim = current.claim, claim.isAbout(head), claim.owner != sessionID,
               !SimulationMutant.takeoverAdoptsReplacedSuccessor.isActive {
                lock.unlock()
                guard claim.isRespected(for: head, at: environment.wallClock(), uptime: environment.uptime(), liveness: claimLiveness) else {
                    diagnostics.record(.notice, "exchange taken over by another process, which got no successor; trying again later",
                                       ["chain": old.chainID, "generation": "\(old.generation)"])
                    return .failed(.transport(code: URLError.timedOut.rawValue,
                                              description: "another process took this exchange over and got no answer; try again"))
                }
                if (try? await environment.sleep(.milliseconds(50))) == nil { return .failed(.cancelled) }
                continue
            }
            guard head != nil else {
                lock.unlock()
                unsavedSuccessor = nil
                return .exchanged(successor)  // logged out elsewhere meanwhile: nothing to store over
            }
            var saveError: BatonClientError?
            do { try persist(StoredCredentials(deviceID: deviceID, bundle: successor)) } catch { saveError = error }
            // Released before anything of the app's runs (the diagnostics handler in
            // keepUnsaved): the other processes sharing the store never wait on it (F16).
            lock.unlock()
            if let saveError { return keepUnsaved(successor, of: old, deviceID: deviceID, because: saveError) }
            unsavedSuccessor = nil
            return .exchanged(successor)
        }
    }

    /// The server committed `successor` but the store could not take it now. It is never
    /// presented unsaved: a process that used it and then ended (iOS ends apps every day) would
    /// relaunch with `old` in the store, whose exchange is then reuse (the successor was
    /// presented) and revokes the chain. So the session keeps `old`, fails this exchange with the
    /// store's error, and saves `successor` at its next call before using it. Should the process
    /// end first, the relaunch exchanges `old` again: the unsaved successor was never presented,
    /// so the server's lost-response retry (R3a) answers with a fresh one (a bound chain: within
    /// the parent's exchange window; a Bearer chain: within the retry grace).
    private func keepUnsaved(_ successor: TokenBundle, of old: TokenBundle, deviceID: String,
                             because error: BatonClientError) -> ExchangeOutcome {
        diagnostics.record(.notice, "successor not saved; kept unused until it is saved (the session keeps its token)",
                           ["chain": successor.chainID, "generation": "\(successor.generation)", "error": error.diagnosticText])
        unsavedSuccessor = (old.token, StoredCredentials(deviceID: deviceID, bundle: successor))
        if SimulationMutant.presentUnsavedSuccessor.isActive { return .exchanged(successor) }
        retrySavingUnsavedSuccessor()
        return .failed(error)
    }

    /// The pauses before the background tries to save a refused successor: all within a
    /// Bearer chain's retry grace (10 s by default), so that a store that fails for a moment
    /// (a Keychain write refused once) costs nothing, even when no request comes meanwhile and
    /// another process (the extension) would exchange the older token after the grace.
    static let unsavedRetryPauses: [Duration] = [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4)]

    /// Tries to save the refused successor again in the background, on `unsavedRetryPauses`,
    /// until it is saved, dropped, or the tries run out (the next call tries again).
    private func retrySavingUnsavedSuccessor() {
        let sleep = environment.sleep
        Task { [weak self] in
            for pause in Self.unsavedRetryPauses {
                guard (try? await sleep(pause)) != nil, let self else { return }
                guard await self.unsavedSuccessor != nil else { return }
                await self.saveUnsavedSuccessor()
            }
        }
    }

    /// After this session's claim was taken over and before it sent a further attempt: waits
    /// for the takeover to end (unlocked, polled), then adopts what it stored. A takeover that
    /// ended without a successor leaves the token to the next request (a failure now, no logout).
    private func outcomeOfTakeover(of old: TokenBundle) async -> ExchangeOutcome {
        while true {
            let lock: CredentialStoreLock
            do { lock = try await store.lock() } catch { return .failed(error) }
            let stored: StoredCredentials?
            do { stored = try store.load() } catch {
                lock.unlock()
                return .failed(error)
            }
            lock.unlock()
            guard let current = stored, let head = current.bundle else { return .loginRequired(.loggedOut) }
            if head.token != old.token { return .adopted(head) }
            guard let claim = current.claim, claim.owner != sessionID,
                  claim.isRespected(for: head, at: environment.wallClock(), uptime: environment.uptime(), liveness: claimLiveness) else {
                return .failed(.transport(code: URLError.timedOut.rawValue,
                                          description: "another process's exchange of this token ended without a successor"))
            }
            if (try? await environment.sleep(.milliseconds(50))) == nil { return .failed(.cancelled) }
        }
    }

    /// What claiming an exchange found.
    private enum ClaimResult {
        /// Nothing to send: adopt, log in again, or fail.
        case decided(ExchangeOutcome)
        /// This session holds the claim.
        case claimed(Claimed)
    }

    /// The grace `old`'s exchange schedule is fitted to: the server's retry grace for a Bearer
    /// chain, the bound retry window for a bound one (its retry is proved by its key).
    private func grace(for old: TokenBundle) -> Duration {
        old.tokenType == .dpop ? BatonConfiguration.boundRetryWindow : configuration.serverRetryGrace
    }

    /// A claim this session holds: the stored device id, and the plan of its attempts (fitted
    /// to the grace left since this token's first claim: all of it unless this is a takeover).
    private struct Claimed {
        let deviceID: String
        let plan: ExchangePlan
        let firstClaimedAtUptime: Double
        /// The number of the first attempt (R3b).
        let firstAttempt: Int
    }

    /// The plan for `old`'s exchange when its first claim was made at uptime `firstClaimed`.
    /// Its attempts wait as long as this network's answers take (`ExchangeRoundTrips`), at
    /// least `exchangeTimeout`.
    private func plan(for old: TokenBundle, firstClaimed: Double, now uptime: Double) -> ExchangePlan {
        let grace = grace(for: old)
        let used = Duration.seconds(max(0, uptime - firstClaimed))
        let left = grace - used
        let requestTimeout = Duration.seconds(configuration.requestTimeout)
        let ceiling = ExchangeRoundTrips.ceiling(grace: grace, firstDelay: configuration.exchangeRetryDelay, requestTimeout: requestTimeout)
        let timeout = exchangeRoundTrips.attemptTimeout(floor: configuration.exchangeTimeout,
                                                        ceiling: max(configuration.exchangeTimeout, ceiling))
        let schedule = ExchangeSchedule(timeout: timeout, attempts: configuration.exchangeAttempts,
                                        firstDelay: configuration.exchangeRetryDelay, grace: used > .zero ? max(left, .zero) : grace)
        return ExchangePlan(schedule: schedule, requestTimeout: requestTimeout, graceLeft: left,
                            retriesWhileGraceLasts: old.tokenType != .dpop)
    }

    /// Under the store's lock: adopt a newer stored bundle, or respect another session's live
    /// claim (unlock, wait, look again), or write this session's claim.
    private func claimExchange(of old: TokenBundle) async -> ClaimResult {
        while true {
            let lock: CredentialStoreLock
            do { lock = try await store.lock() } catch { return .decided(.failed(error)) }
            var stored: StoredCredentials?
            do { stored = try store.load() } catch {
                lock.unlock()
                return .decided(.failed(error))
            }
            if unsavedSuccessor?.old == old.token {
                // A successor of `old` that the store refused earlier: saved now, it is the
                // answer (no second exchange); refused again, the exchange waits for the store.
                do { stored = try saveUnsavedSuccessor(over: stored) } catch {
                    lock.unlock()
                    return .decided(.failed(error))
                }
            }
            // Another process sharing the store may have exchanged, logged in or out meanwhile.
            guard var current = stored, let head = current.bundle else {
                lock.unlock()
                return .decided(.loginRequired(.loggedOut))
            }
            if head.token != old.token {
                if old.isLater(inChainOf: head) && !SimulationMutant.adoptOlderTokenAfterFailedRead.isActive {
                    // H5: the store is behind this session (a successor it could not save, or
                    // a read that failed while it was recorded): `old` is the chain's head.
                    // Never adopt the older, spent token; write the head back and go on.
                    current = StoredCredentials(deviceID: current.deviceID, bundle: old)
                } else {
                    lock.unlock()
                    return .decided(.adopted(head))
                }
            }
            let now = environment.wallClock()  // the wall clock every sharer reads, not the configuration's
            let uptime = environment.uptime()  // what the lease runs on (M5)
            if let claim = current.claim, claim.owner != sessionID, claim.isRespected(for: head, at: now, uptime: uptime, liveness: claimLiveness) {
                lock.unlock()
                // Another session is exchanging this token: wait for its successor (or for its
                // lease to run out: then this session takes over, inside the server's grace).
                if (try? await environment.sleep(.milliseconds(50))) == nil { return .decided(.failed(.cancelled)) }
                continue
            }
            // A stale claim of this token is a takeover (its owner died, or was stopped past its
            // lease): the server's grace counts from that owner's first claim (H1).
            let stale = current.claim.flatMap { $0.isAbout(head) ? $0 : nil }
            let firstClaimed = min(uptime, stale?.firstClaimedAtUptime ?? stale?.renewedAtUptime ?? uptime)
            let plan = plan(for: old, firstClaimed: firstClaimed, now: uptime)
            // R3b: above every number any sharer sent for this token (the claim keeps the count).
            let attempt = nextAttempt(for: head, after: current.claim.flatMap { $0.isAbout(head) ? $0.lastAttempt : nil } ?? 0)
            current.claim = ExchangeClaim(owner: sessionID, chainID: head.chainID, generation: head.generation, startedAt: now,
                                          lease: plan.lease(ofAttempt: 0).seconds, renewedAtUptime: uptime,
                                          firstClaimedAtUptime: firstClaimed, ownerProcess: claimLiveness.current, lastAttempt: attempt)
            do { try persist(current) } catch {
                lock.unlock()
                return .decided(.failed(error))
            }
            lock.unlock()
            return .claimed(Claimed(deviceID: current.deviceID, plan: plan, firstClaimedAtUptime: firstClaimed, firstAttempt: attempt))
        }
    }

    /// What the server said to the exchange, once the schedule has run.
    private enum ExchangeAnswer {
        case successor(TokenBundle)
        case loginRequired(LoginRequiredReason)
        case failed(BatonClientError)
        /// Another session took the claim over before an attempt: none was sent.
        case takenOver
    }

    /// Sends the exchange of `old` on the schedule, with the store unlocked.
    private func sendExchange(of old: TokenBundle, claimed: Claimed, proofKey: DeviceKey?) async -> ExchangeAnswer {
        let deviceID = claimed.deviceID
        var lastError = BatonClientError.transport(code: -1, description: "no attempt")
        let started = environment.monotonicNow()
        var attempt = 0
        var number = claimed.firstAttempt
        // The number this session last stored in its claim; `number` above it means an attempt
        // beyond it went out since (at most one may: see `.storeUnavailable` below).
        var storedNumber = claimed.firstAttempt
        // The latest attempt, unanswered at its deadline: listened to until the next one goes out.
        var listening: ExchangeAttempt?
        defer { listening?.cancel() }
        while let (pause, timeout) = claimed.plan.attempt(attempt, elapsed: environment.monotonicNow() - started) {
            defer { attempt += 1 }
            if attempt > 0 {
                if pause > .zero { try? await environment.sleep(pause) }
                // Attempts run in tasks of their own, which a cancelled exchange does not cancel.
                if Task.isCancelled { return .failed(.cancelled) }
                // The claim covers one attempt at a time: renewed before each, or given up when
                // another session took it over meanwhile (then its answer decides: H1).
                switch await renewClaim(of: old, lease: claimed.plan.lease(ofAttempt: attempt)) {
                case .renewed(let next):
                    number = next
                    storedNumber = next
                case .takenOver:
                    return .takenOver
                case .storeUnavailable(let error, let attempted):
                    if SimulationMutant.attemptWithoutRenewedClaim.isActive {
                        number = attempted ?? nextAttempt(for: old, after: 0)
                    } else if number == storedNumber {
                        // One attempt may go out numbered just above the stored number: a
                        // session that takes the claim over numbers its own attempts above the
                        // stored one too, so this one is at most equal to the takeover's, and of
                        // two equal numbers the server serves the first and answers the second
                        // `exchange_attempt_superseded` (R3b). A lost answer then still gets its
                        // retry within the grace although the store failed once.
                        number = storedNumber + 1
                        noteAttempt(number, for: old)
                    } else {
                        // A second one would be numbered above a takeover's and replace the
                        // successor the takeover stores (baton-sim seed 2165139018237: a fork).
                        // Not sent; this slot listens to the last attempt sent, if its answer is
                        // still to come, and the schedule's next slot tries the store again.
                        lastError = error
                        if let late = listening {
                            _ = await late.answer(within: timeout, environment: environment,
                                                  lateBy: Self.lateDeadline, lateWindow: Self.lateAnswerWindow)
                            // An answer asking for another attempt (a lost answer's resend
                            // refused as superseded, a 5xx) asks for what the store forbids
                            // now: the store's error stays the reason the exchange ends.
                            if case .final(let answer)? = lateAnswer(from: &listening, old: old, proofKey: proofKey) { return answer }
                        } else if pause == .zero {
                            try? await environment.sleep(Self.storeRetryPause)
                        }
                        continue
                    }
                }
            }
            // An answer that came after its attempt's deadline, in the pause or while the claim
            // was renewed (another process may hold the store's lock a while), is the server's
            // word on this exchange: no further attempt replaces it.
            switch lateAnswer(from: &listening, old: old, proofKey: proofKey) {
            case .final(let answer)?: return answer
            case .retry(let error)?: lastError = error
            case nil: break
            }
            listening?.cancel()
            listening = nil
            let sending: ExchangeAttempt
            let sent = environment.monotonicNow()
            do {
                var request = URLRequest(url: configuration.baseURL.appendingPathComponent("v1/exchange"))
                request.httpMethod = "POST"
                // R3a: the same token and the same device id on every attempt.
                var prepared = try transport.prepare(request, deviceID: deviceID, authorization: old.authorization)
                // The attempt's own deadline ends the wait for it (below), not URLSession's idle
                // timer; the request itself goes on until the next attempt goes out.
                prepared.timeoutInterval = Self.exchangeTransportTimeout
                // R3b: the server answers a late attempt numbered no higher than the one that
                // made the head without touching the head this session may hold by then.
                prepared.setValue(String(number), forHTTPHeaderField: Self.attemptHeader)
                let transport = self.transport, ready = prepared
                sending = ExchangeAttempt(number: number, clock: environment.monotonicNow) { () async throws(BatonClientError) in
                    try await transport.send(ready, kind: .session, proofKey: proofKey)
                }
            } catch {
                lastError = error
                continue
            }
            guard let answer = await sending.answer(within: timeout, environment: environment,
                                                    lateBy: Self.lateDeadline, lateWindow: Self.lateAnswerWindow) else {
                // A deadline that fired late timed the process's suspension, not the network.
                if environment.monotonicNow() - sent < timeout + Self.lateDeadline { exchangeRoundTrips.timedOut() }
                lastError = .transport(code: URLError.timedOut.rawValue, description: "no answer to the exchange within \(timeout)")
                if SimulationMutant.lateAnswerDiscarded.isActive { sending.cancel() } else { listening = sending }
                continue
            }
            if case .success = answer { exchangeRoundTrips.answered(after: min(sending.answerTime ?? timeout, timeout)) }
            switch judge(answer, of: number, old: old, proofKey: proofKey) {
            case .final(let answer): return answer
            case .retry(let error): lastError = error
            }
        }
        // An answer that came as the last slot's wait ended.
        if case .final(let answer)? = lateAnswer(from: &listening, old: old, proofKey: proofKey) { return answer }
        return .failed(lastError)
    }

    /// The answer to the attempt listened to, if it came: judged, its time learned, and the
    /// attempt no longer listened to. Nil while it is still to come.
    private func lateAnswer(from listening: inout ExchangeAttempt?, old: TokenBundle, proofKey: DeviceKey?) -> AttemptVerdict? {
        guard let late = listening, let answer = late.answer else { return nil }
        listening = nil
        learnAnswerTime(of: late, answer, old: old)
        return judge(answer, of: late.number, old: old, proofKey: proofKey)
    }

    /// Times an answer read after its attempt's deadline: the network's answer time, which the
    /// next exchanges' attempts should wait for. Cut to the timer's ceiling: a process stopped
    /// meanwhile (iOS suspended the app) times its stop, not the network, and a stop should cost
    /// no more than two timeouts in a row do (both put the next wait at the ceiling).
    private func learnAnswerTime(of attempt: ExchangeAttempt, _ answer: ExchangeAttempt.Answer, old: TokenBundle) {
        guard case .success = answer, let time = attempt.answerTime else { return }
        let ceiling = ExchangeRoundTrips.ceiling(grace: grace(for: old), firstDelay: configuration.exchangeRetryDelay,
                                                 requestTimeout: .seconds(configuration.requestTimeout))
        exchangeRoundTrips.answered(after: min(time, max(configuration.exchangeTimeout, ceiling)))
    }

    /// What one attempt's answer means for the exchange.
    private enum AttemptVerdict {
        /// The exchange ends with it.
        case final(ExchangeAnswer)
        /// The schedule's next attempt is made; `error` is the exchange's if none follows.
        case retry(BatonClientError)
    }

    /// Reads the answer to attempt `number` of `old`'s exchange.
    private func judge(_ answer: ExchangeAttempt.Answer, of number: Int, old: TokenBundle, proofKey: DeviceKey?) -> AttemptVerdict {
        let data: Data, response: HTTPURLResponse
        switch answer {
        case .success(let answered): (data, response) = answered
        case .failure(let error): return .retry(error)
        }
        let serverError = ServerError.from(body: data, response: response)
        switch response.statusCode {
        case 200:
            do {
                return .final(.successor(try TokenBundle.decode(data, receivedAt: configuration.now(), key: proofKey, defaultType: old.tokenType)))
            } catch {
                // The server consumed the token but the answer is unreadable: like a lost answer.
                return .retry(error)
            }
        case 401 where serverError.flatMap(LoginRequiredReason.init) != nil:
            return .final(.loginRequired(LoginRequiredReason(serverError!)!))
        case 401 where serverError?.code == "invalid_dpop_proof" && deviceKeyIsGone(for: old):
            // A refused proof is no logout by itself; a key gone from the store is.
            return .final(.loginRequired(.deviceKeyLost))
        case 401 where serverError?.code == "invalid_dpop_proof" && proofKey != nil:
            // The key is here, so the proof was refused for the request's own journey: most
            // often `jti_replayed`, a copy of this very request reached the server first (a
            // duplicating network, a transport resend) and may have committed. A refusal
            // changes nothing on the server, and the next attempt carries a fresh proof, which
            // the server takes as this key's retry. (The transport already sent it once more;
            // this is the schedule's next attempt, so a fault that hits the resend too does
            // not fail the app's request.)
            return .retry(.http(data, response, error: serverError))
        case 409 where serverError?.code == "exchange_attempt_superseded":
            // R3b: a copy of this attempt (or a later one of another sharer) made the head
            // first, and the answer that carried it is not ours: the next attempt, numbered
            // above the head's, is the server's lost-response retry.
            noteAttempt(serverError?.attempt ?? number, for: old)
            return .retry(.http(data, response, error: serverError))
        case 429, 500...:
            return .retry(.http(data, response, error: serverError))
        default:
            return .final(.failed(.http(data, response, error: serverError)))
        }
    }

    /// What renewing the claim before an attempt found.
    private enum ClaimRenewal {
        /// The claim is this session's again, recorded with the attempt's number.
        case renewed(Int)
        /// Another session took it over, or the store moved on (a successor or another login
        /// stored): no further attempt.
        case takenOver
        /// The store could not be locked, read or written now; `attempted` is the number whose
        /// write failed (nil when the lock or the read failed).
        case storeUnavailable(BatonClientError, attempted: Int?)
    }

    /// Under the store's lock: renews this session's claim on `old` for `lease` from now, with
    /// the next attempt's number (R3b). An attempt's number is in the store before it is sent,
    /// or at most one above it (`sendExchange`), so a session that takes the claim over (this
    /// process stopped past its lease) numbers its own attempts no lower, and this session's
    /// late attempt can never replace the takeover's successor at the server (it is answered
    /// `exchange_attempt_superseded`, or is replaced by the takeover's retry).
    private func renewClaim(of old: TokenBundle, lease: Duration) async -> ClaimRenewal {
        let lock: CredentialStoreLock
        do { lock = try await store.lock() } catch { return .storeUnavailable(error, attempted: nil) }
        defer { lock.unlock() }
        let stored: StoredCredentials?
        do { stored = try store.load() } catch { return .storeUnavailable(error, attempted: nil) }
        guard var current = stored, let head = current.bundle, head.token == old.token else { return .takenOver }
        if let claim = current.claim, claim.owner != sessionID, claim.isAbout(head) { return .takenOver }
        let uptime = environment.uptime()
        let first = current.claim?.firstClaimedAtUptime ?? uptime
        let attempt = nextAttempt(for: head, after: current.claim?.lastAttempt ?? 0)
        current.claim = ExchangeClaim(owner: sessionID, chainID: head.chainID, generation: head.generation, startedAt: environment.wallClock(),
                                      lease: lease.seconds, renewedAtUptime: uptime, firstClaimedAtUptime: first,
                                      ownerProcess: claimLiveness.current, lastAttempt: attempt)
        do { try persist(current) } catch { return .storeUnavailable(error, attempted: attempt) }
        return .renewed(attempt)
    }

    /// The pause before a schedule's slot tries the store again after a refused renewal, when
    /// the schedule itself has none (`exchangeRetryDelay` 0): no tight loop on a failing store.
    static let storeRetryPause: Duration = .milliseconds(50)

    /// The header that numbers an exchange attempt (R3b, docs/api.md).
    static let attemptHeader = "X-Baton-Exchange-Attempt"

    /// The number of `token`'s next exchange attempt: above `stored` (the claim's count) and
    /// above every number this session sent or was told of for it. Remembered as sent.
    private func nextAttempt(for token: TokenBundle, after stored: Int) -> Int {
        let next = max(highestAttempt(of: token), stored) + 1
        lastAttempt = (token.chainID, token.generation, next)
        return next
    }

    /// Remembers that attempt `number` of `token`'s exchange was made (by the server's word).
    private func noteAttempt(_ number: Int, for token: TokenBundle) {
        lastAttempt = (token.chainID, token.generation, max(highestAttempt(of: token), number))
    }

    /// The highest attempt number this session knows of for `token`'s exchange (0: none).
    private func highestAttempt(of token: TokenBundle) -> Int {
        guard let last = lastAttempt, last.chainID == token.chainID, last.generation == token.generation else { return 0 }
        return last.number
    }

    /// URLSession's idle timeout for an exchange attempt: far beyond any schedule, so that only
    /// the attempt's own deadline (`ExchangeAttempt.answer(within:)`) ends the wait for it.
    static let exchangeTransportTimeout: TimeInterval = 3600
    /// How late a deadline must fire to say the process was stopped meanwhile.
    static let lateDeadline: Duration = .milliseconds(500)
    /// How long an answer that may have arrived while the process was stopped is given to be read.
    static let lateAnswerWindow: Duration = .seconds(1)

    /// Under the store's lock: stores the successor (or clears the bundle after the server's
    /// final answer, or drops the claim after a failure) if the store still holds `old`.
    private func record(_ answer: ExchangeAnswer, of old: TokenBundle, deviceID: String) async -> ExchangeOutcome {
        let lock = try? await store.lock()
        defer { lock?.unlock() }
        var stored: StoredCredentials?
        if lock != nil { stored = try? store.load() }
        let held = stored?.bundle?.token
        let storeHoldsOld = held == old.token
        switch answer {
        case .successor:
            return .failed(.cancelled)  // not reached: exchangeCoordinated records a successor itself
        case .loginRequired(let reason):
            // Cleared under the lock, so another process waiting for it finds no bundle
            // instead of exchanging the dead token again.
            if storeHoldsOld { try? persist(StoredCredentials(deviceID: stored?.deviceID ?? deviceID, bundle: nil)) }
            unsavedSuccessor = nil
            return .loginRequired(reason)
        case .takenOver:
            return .failed(.cancelled)  // not reached: exchangeCoordinated decides a takeover
        case .failed(let error):
            if storeHoldsOld, var current = stored, current.claim?.owner == sessionID {
                // Expired, not removed: the next try (ours or another session's) need not wait,
                // and an owner this session took the claim over from sees that a retry may
                // have replaced its answer (H1: it must not present it).
                current.claim?.lease = 0
                // With every number this session used or was told of: one may have gone out above
                // the stored one while the store failed, and a takeover numbers its own above it.
                let sent = max(current.claim?.lastAttempt ?? 0, highestAttempt(of: old))
                current.claim?.lastAttempt = sent
                try? persist(current)
            }
            return .failed(error)
        }
    }

    /// Saves a successor the store refused earlier, if the store still holds the token it
    /// replaced (anything else there is newer news: another login or logout wins), and then
    /// uses it: only a saved successor is ever presented.
    func saveUnsavedSuccessor() async {
        guard unsavedSuccessor != nil, let lock = try? await store.lock() else { return }
        defer { lock.unlock() }
        // Read again after the wait: an exchange recorded meanwhile may have replaced it (the
        // pending successor then is spent, and writing it would store a dead token).
        guard let old = unsavedSuccessor?.old else { return }
        let stored: StoredCredentials?
        do { stored = try store.load() } catch { return }  // unreadable now: try at the next call
        let after: StoredCredentials?
        do { after = try saveUnsavedSuccessor(over: stored) } catch { return }  // refused again: the next try
        if let successor = after?.bundle, successor.token != stored?.bundle?.token {
            _ = apply(.successorSaved(old: old, successor))
        }
    }

    /// Under the store's lock, with `stored` just read: saves the refused successor if the store
    /// still holds the token it replaced and the claim on that token is still this session's;
    /// otherwise drops it unused (another login or logout won, or a takeover by another session,
    /// H1, whose retry may have replaced it at the server). Returns what the store holds after.
    /// - Throws: the store's error; the successor stays pending.
    private func saveUnsavedSuccessor(over stored: StoredCredentials?) throws(BatonClientError) -> StoredCredentials? {
        guard let (old, credentials) = unsavedSuccessor else { return stored }
        guard stored?.bundle?.token == old, stored?.claim?.owner == sessionID else {
            unsavedSuccessor = nil
            return stored
        }
        try persist(credentials)
        unsavedSuccessor = nil
        return credentials
    }
}

extension Duration {
    /// The duration in seconds, for Foundation's `TimeInterval`.
    var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
