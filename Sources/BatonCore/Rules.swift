/// The exchange rules R2-R7 as pure functions of a chain's state, the presented token's
/// standing, the time and the policy. The store applies the outcomes to rows.
package enum Rules {
    /// What verify (and the read half of every operation) should answer (R5).
    package enum VerifyOutcome: Equatable, Sendable {
        case accepted
        case rejected(BatonError)
        /// R4: an R3a-revoked sibling was presented; revoke the chain.
        case forkDetected
    }

    /// What an exchange should do (R2, R3, R3a, R4).
    package enum ExchangeOutcome: Equatable, Sendable {
        /// R2: consume the head, issue the next generation.
        case advance
        /// R3a: revoke the unused head, issue a replacement at the same generation.
        case retry
        /// R3: revoke the chain; the record is the original exchange.
        case reuse(ExchangeRecord?)
        /// R3b: an attempt of the exchange that made the head, numbered no higher than the
        /// attempt that made it, within R3a's window: answered without touching anything.
        case attemptSuperseded(headAttempt: Int)
        case forkDetected
        case rejected(BatonError)
    }

    /// What a logout should do (R6).
    package enum LogoutOutcome: Equatable, Sendable {
        case revoke
        case forkDetected
        case rejected(BatonError)
    }

    /// Classifies a token by comparing it with the head and, for other generations, with
    /// the lineage rows stored at its generation (`sameGeneration`: hash, how it ended).
    package static func standing(
        of token: PresentedToken, in chain: ChainHead,
        sameGeneration: [(hash: [UInt8], end: LineageEnd)]
    ) -> Standing {
        if token.generation > chain.generation { return .unknown }
        if token.generation == chain.generation, token.hash.matches(chain.hash) { return .head }
        for row in sameGeneration where token.hash.matches(row.hash) {
            switch row.end {
            case .exchanged(let record): return .consumed(record)
            case .replaced: return .replacedSibling
            }
        }
        // An older generation with no row: its lineage was pruned. The MAC proves we issued
        // it and every older generation was consumed, so it is consumed (reuse still caught).
        return token.generation < chain.generation ? .consumed(nil) : .unknown
    }

    /// The answers that outrank the rule-specific one, in the contract's order:
    /// token_invalid > chain_revoked > session_expired. A chain of a disabled user is revoked
    /// (`user_disabled`) whether or not its row says so: disabling an account ends every
    /// session, whatever the store's rows and the admin CLI's idea of the lifetimes.
    package static func precedingError(_ standing: Standing, _ chain: ChainHead, now: Instant, _ policy: Policy) -> BatonError? {
        if standing == .unknown { return .tokenInvalid }
        if let reason = chain.revocation { return .chainRevoked(reason) }
        if chain.isUserDisabled { return .chainRevoked(.userDisabled) }
        if now >= chain.sessionEnd(policy) { return .sessionExpired }
        return nil
    }

    /// R5: verify never revokes for a consumed token; token_superseded > token_expired. With
    /// `maxAge` (RFC 9470), an accepted head whose chain authenticated longer ago is
    /// insufficient_user_authentication, the last answer in the precedence.
    package static func verify(
        _ standing: Standing, _ chain: ChainHead, now: Instant, _ policy: Policy, maxAge: Duration? = nil
    ) -> VerifyOutcome {
        if let error = precedingError(standing, chain, now: now, policy) { return .rejected(error) }
        switch standing {
        case .head:
            if now >= chain.expiresAt { return .rejected(.tokenExpired) }
            if let maxAge, !isRecent(chain, maxAge: maxAge, now: now) {
                return .rejected(.insufficientUserAuthentication(maxAge: maxAge.components.seconds))
            }
            return .accepted
        case .consumed: return .rejected(.tokenSuperseded)
        case .replacedSibling: return .forkDetected
        case .unknown: return .rejected(.tokenInvalid)
        }
    }

    /// R2/R3/R3a/R4 for an exchange; token_reused or the retry > exchange_window_closed.
    package static func exchange(
        _ standing: Standing, _ chain: ChainHead, token: PresentedToken, context: RequestContext,
        now: Instant, _ policy: Policy
    ) -> ExchangeOutcome {
        if let error = precedingError(standing, chain, now: now, policy) { return .rejected(error) }
        switch standing {
        case .head:
            return now >= chain.exchangeDeadline(policy) ? .rejected(.exchangeWindowClosed) : .advance
        case .consumed(let record):
            if let headAttempt = supersedingAttempt(token, chain, consumed: record, context: context, now: now, policy) {
                return .attemptSuperseded(headAttempt: headAttempt)
            }
            let retry = chain.isBound
                ? isBoundLostResponseRetry(token, chain, consumed: record, now: now, policy)
                : isLostResponseRetry(token, chain, context: context, now: now, policy)
            return retry ? .retry : .reuse(record)
        case .replacedSibling:
            return .forkDetected
        case .unknown:
            return .rejected(.tokenInvalid)
        }
    }

    /// R6: logout revokes the chain of the presented token, the head (expired or not) or a
    /// consumed one: whoever holds any token of the chain wants it ended, and a consumed token
    /// at logout means someone else moved the chain on (the device's own lost answer, or a thief
    /// whose session must not outlive the user's logout; found by baton-sim, seed 3881).
    package static func logout(_ standing: Standing, _ chain: ChainHead, now: Instant, _ policy: Policy) -> LogoutOutcome {
        if let error = precedingError(standing, chain, now: now, policy) { return .rejected(error) }
        switch standing {
        case .head, .consumed: return .revoke
        case .replacedSibling: return .forkDetected
        case .unknown: return .rejected(.tokenInvalid)
        }
    }

    /// R3b: the number of the attempt that made the head, when `token` is the head's parent and
    /// this request is an attempt of the same exchange numbered no higher (`exchangeAttempt` ≤
    /// the head's `attempt`): the client sent a later attempt, which made the head (or is a copy
    /// of that one), so this one was abandoned and must not replace the successor the client
    /// holds. Only within R3a's window and from R3a's caller (a Bearer chain: the chain's device
    /// id, the head issued less than the grace ago; a bound chain: the key, proved before the
    /// rules run, within the parent's exchange window), whether or not the head was presented
    /// since: outside it the presentation is what it always was (R3, reuse). Nil when either
    /// side has no number: clients that send none keep R3a as it was.
    package static func supersedingAttempt(
        _ token: PresentedToken, _ chain: ChainHead, consumed: ExchangeRecord?, context: RequestContext, now: Instant, _ policy: Policy
    ) -> Int? {
        guard !RuleMutant.abandonedAttemptReplacesHead.isActive, let attempt = context.exchangeAttempt else { return nil }
        if token.generation < chain.generation - 1 {
            return lateAttemptOfAnOlderToken(attempt, chain, consumed: consumed, context: context, now: now, policy)
        }
        guard let headAttempt = chain.attempt, attempt <= headAttempt,
              isWithinRetryWindow(token, chain, consumed: consumed, context: context, now: now, policy) else { return nil }
        return headAttempt
    }

    /// R3a's window and caller, whether or not the head was presented since (R3b's question):
    /// the token is the head's parent, and a Bearer chain's caller is its device within the
    /// grace of the head's issue, a bound chain's is within the parent's exchange window.
    static func isWithinRetryWindow(
        _ token: PresentedToken, _ chain: ChainHead, consumed: ExchangeRecord?, context: RequestContext, now: Instant, _ policy: Policy
    ) -> Bool {
        chain.isBound
            ? isWithinBoundRetryWindow(token, chain, consumed: consumed, now: now, policy)
            : isWithinBearerRetryWindow(token, chain, context: context, now: now, policy)
    }

    /// R3b for a token older than the head's parent: a numbered attempt that reaches the server
    /// after the chain moved on twice (an attempt the client gave up on, held in the network
    /// while a later attempt succeeded and the successor was exchanged again; found by
    /// baton-sim, seed 52630). Answered without revoking when it can only be the device's own
    /// late traffic: a bound chain's (its proof by the key is checked before the rules) within
    /// `lateAttemptWindow` of its token's exchange (a proof older than that is refused anyway);
    /// a Bearer chain's from the chain's device id within the retry grace, and only while the
    /// head was made by a numbered attempt: a client that numbers its attempts numbers every
    /// exchange, so an unnumbered exchange since is someone else's (a thief holding a copy of
    /// the device's token and id moved the chain on twice within the grace, and the device's
    /// next attempt must be the reuse it is; found by baton-sim, seed 800115458). Returns the
    /// request's own number (the head's says nothing about this token's exchange).
    static func lateAttemptOfAnOlderToken(
        _ attempt: Int, _ chain: ChainHead, consumed: ExchangeRecord?, context: RequestContext, now: Instant, _ policy: Policy
    ) -> Int? {
        guard policy.retryGrace > .zero, let consumedAt = consumed?.at else { return nil }
        if chain.isBound { return now - consumedAt < policy.lateAttemptWindow ? attempt : nil }
        return context.deviceID == chain.deviceID && chain.attempt != nil && now - consumedAt < policy.retryGrace ? attempt : nil
    }

    /// R3a: the consumed token is the head's parent, the head was never presented and was
    /// issued less than the grace ago, and the caller is the chain's device.
    package static func isLostResponseRetry(
        _ token: PresentedToken, _ chain: ChainHead, context: RequestContext, now: Instant, _ policy: Policy
    ) -> Bool {
        !chain.presented && isWithinBearerRetryWindow(token, chain, context: context, now: now, policy)
    }

    /// R3a's conditions for a Bearer chain but the head's presentation.
    static func isWithinBearerRetryWindow(
        _ token: PresentedToken, _ chain: ChainHead, context: RequestContext, now: Instant, _ policy: Policy
    ) -> Bool {
        policy.retryGrace > .zero
            && token.generation == chain.generation - 1
            && now - chain.issuedAt < policy.retryGrace
            && context.deviceID == chain.deviceID
    }

    /// R3a for a bound chain, whose caller already proved the chain's key (the operation
    /// refuses any other request before the rules run): the consumed token is the head's
    /// parent, the head was never presented, and the parent is still within its own exchange
    /// window (`exchange_until` of its bundle). X-Device-Id plays no part: it is no secret, the
    /// key is. Without the parent's issue time (lineage pruned) there is no retry; with
    /// `--retry-grace 0` neither.
    package static func isBoundLostResponseRetry(
        _ token: PresentedToken, _ chain: ChainHead, consumed: ExchangeRecord?, now: Instant, _ policy: Policy
    ) -> Bool {
        !chain.presented && isWithinBoundRetryWindow(token, chain, consumed: consumed, now: now, policy)
    }

    /// R3a's conditions for a bound chain but the head's presentation.
    static func isWithinBoundRetryWindow(
        _ token: PresentedToken, _ chain: ChainHead, consumed: ExchangeRecord?, now: Instant, _ policy: Policy
    ) -> Bool {
        // --retry-grace 0 (strict) turns R3a off for bound chains too: the operator asked for none.
        guard policy.retryGrace > .zero, token.generation == chain.generation - 1,
              let issuedAt = consumed?.tokenIssuedAt else { return false }
        let parentExpiry = min(issuedAt + policy.tokenTTL, chain.sessionEnd(policy))
        return now < min(parentExpiry + policy.exchangeWindow, chain.sessionEnd(policy))
    }

    /// R7: which of the user's live chains (oldest first) a new login on `deviceClass`
    /// revokes, and why. The new chain is counted against `maxChainsPerUser`.
    package static func chainsToRevokeForLogin(
        live: [(id: ChainID, deviceClass: DeviceClass)], deviceClass: DeviceClass, _ policy: Policy
    ) -> [(ChainID, RevocationReason)] {
        var revoked: [(ChainID, RevocationReason)] = []
        var remaining = live
        if policy.oneChainPerDeviceClass {
            revoked += remaining.filter { $0.deviceClass == deviceClass }.map { ($0.id, .loggedInElsewhere) }
            remaining.removeAll { $0.deviceClass == deviceClass }
        }
        if policy.maxChainsPerUser > 0 {
            let excess = remaining.count + 1 - policy.maxChainsPerUser
            if excess > 0 { revoked += remaining.prefix(excess).map { ($0.id, .evicted) } }
        }
        return revoked
    }
}

/// How a lineage row ended (`tokens.ended_by`).
package enum LineageEnd: Sendable, Equatable {
    case exchanged(ExchangeRecord)
    case replaced
}
