@testable import BatonCore
import Testing

/// Step-up decisions (RFC 9470) as pure functions of the chain, the time and the policy.
struct StepUpRulesTests {
    let start = Instant(milliseconds: 1_800_000_000_000)
    let policy = Policy()

    func chain(authTime: Instant? = nil, failures: Int = 0, revoked: RevocationReason? = nil, issuedAt: Instant? = nil) -> ChainHead {
        ChainHead(id: ChainID(rawValue: 9), userID: 1, deviceID: "phone-1", deviceClass: .mobile, createdAt: start,
                  generation: 2, hash: Digest.sha256([1]), issuedAt: issuedAt ?? start, expiresAt: (issuedAt ?? start) + .seconds(900),
                  presented: false, revocation: revoked, authTime: authTime, confirmFailures: failures)
    }

    @Test func authTimeDefaultsToTheLogin() {
        #expect(chain().authTime == start)
    }

    @Test func maxAgeAllowsExactlyTheWindow() {
        let head = chain()
        let maxAge = Duration.seconds(300)
        #expect(Rules.verify(.head, head, now: start + .seconds(300), policy, maxAge: maxAge) == .accepted)
        #expect(Rules.verify(.head, head, now: start + .milliseconds(300_001), policy, maxAge: maxAge)
                == .rejected(.insufficientUserAuthentication(maxAge: 300)))
        #expect(Rules.verify(.head, head, now: start + .milliseconds(1), policy, maxAge: .zero) == .rejected(.insufficientUserAuthentication(maxAge: 0)))
        #expect(Rules.verify(.head, head, now: start, policy, maxAge: .zero) == .accepted)
        // Without max_age, how old the authentication is does not matter.
        #expect(Rules.verify(.head, head, now: start + .seconds(899), policy) == .accepted)
    }

    @Test func insufficientAuthenticationIsTheLastAnswerInThePrecedence() {
        let old = Duration.seconds(1)
        let late = start + .seconds(600)
        let sessionOver = start + policy.maxSession
        // token_invalid > chain_revoked > session_expired > token_superseded > token_expired > insufficient_user_authentication
        #expect(Rules.verify(.unknown, chain(revoked: .logout), now: sessionOver, policy, maxAge: old) == .rejected(.tokenInvalid))
        #expect(Rules.verify(.consumed(nil), chain(revoked: .logout), now: sessionOver, policy, maxAge: old) == .rejected(.chainRevoked(.logout)))
        #expect(Rules.verify(.consumed(nil), chain(), now: sessionOver, policy, maxAge: old) == .rejected(.sessionExpired))
        #expect(Rules.verify(.consumed(nil), chain(), now: start + .seconds(901), policy, maxAge: old) == .rejected(.tokenSuperseded))
        #expect(Rules.verify(.head, chain(), now: start + .seconds(900), policy, maxAge: old) == .rejected(.tokenExpired))
        #expect(Rules.verify(.head, chain(), now: late, policy, maxAge: old) == .rejected(.insufficientUserAuthentication(maxAge: 1)))
        #expect(Rules.verify(.head, chain(authTime: late), now: late, policy, maxAge: old) == .accepted)
    }

    @Test func rightPasswordConfirmsWrongOnesCountUpToTheRevocation() {
        let now = start + .seconds(60)
        #expect(Rules.confirm(.head, chain(failures: 3), passwordMatches: true, now: now, policy) == .confirmed)
        #expect(Rules.confirm(.head, chain(), passwordMatches: false, now: now, policy) == .failed(consecutiveFailures: 1))
        #expect(Rules.confirm(.head, chain(failures: 3), passwordMatches: false, now: now, policy) == .failed(consecutiveFailures: 4))
        #expect(Rules.confirm(.head, chain(failures: 4), passwordMatches: false, now: now, policy) == .revoke(consecutiveFailures: 5))
        var lenient = policy
        lenient.maxConfirmFailures = 0  // never revoke
        #expect(Rules.confirm(.head, chain(failures: 40), passwordMatches: false, now: now, lenient) == .failed(consecutiveFailures: 41))
    }

    @Test func confirmationAnswersAsVerifyForTokensVerifyRefuses() {
        let now = start + .seconds(60)
        // The password is never looked at: a wrong one is not counted against these.
        for matches in [true, false] {
            #expect(Rules.confirm(.unknown, chain(), passwordMatches: matches, now: now, policy) == .rejected(.tokenInvalid))
            #expect(Rules.confirm(.head, chain(revoked: .confirmFailed), passwordMatches: matches, now: now, policy)
                    == .rejected(.chainRevoked(.confirmFailed)))
            #expect(Rules.confirm(.head, chain(), passwordMatches: matches, now: start + policy.maxSession, policy) == .rejected(.sessionExpired))
            #expect(Rules.confirm(.consumed(nil), chain(), passwordMatches: matches, now: now, policy) == .rejected(.tokenSuperseded))
            #expect(Rules.confirm(.head, chain(), passwordMatches: matches, now: start + .seconds(900), policy) == .rejected(.tokenExpired))
            #expect(Rules.confirm(.replacedSibling, chain(), passwordMatches: matches, now: now, policy) == .forkDetected)
        }
    }
}

/// The rules every new password meets, wherever it is set.
struct PasswordRulesTests {
    @Test func boundsAreEightTo1024BytesNamingTheField() {
        #expect(throws: BatonError.invalidArgument("new_password must be at least 8 bytes (UTF-8).")) {
            try PasswordRules.validate("1234567", name: "new_password")
        }
        #expect(throws: BatonError.invalidArgument("Password must be at most 1024 bytes (UTF-8).")) {
            try PasswordRules.validate(String(repeating: "é", count: 513))
        }
        #expect(throws: Never.self) { try PasswordRules.validate("12345678") }
        #expect(throws: Never.self) { try PasswordRules.validate(String(repeating: "x", count: 1024)) }
    }
}
