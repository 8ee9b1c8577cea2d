@_spi(Simulation) import BatonClient
import BatonHTTP
import Foundation

/// Who sent a request: one of the device's launches, or the thief.
enum Party: Equatable {
    case honest(Int)
    case thief
}

/// What the observer has seen so far: outside the code under test, from requests, answers,
/// events and the store only.
struct Observed {
    /// Every token a 200 handed out: its chain's short name, generation and who got it.
    var tokens: [String: (chain: String, generation: Int, party: Party)] = [:]
    /// Chain ids (hex) by short name order, and their short names.
    var chainNames: [String: String] = [:]
    /// The newest tokens of each chain (the only ones that could still verify).
    var recentTokens: [String: [String]] = [:]
    /// When the thief first presented a token that reached the rules (not a refused proof).
    var thiefPresentedAt: SimClock.Instant?
    /// The chain the thief's copy belongs to, and whether the thief got a successor.
    var thiefChain: String?
    var thiefSuccessor: String?
    /// Who presented a token of the thief's chain (reaching the rules) since the thief got a
    /// successor: once both have, the chain must be revoked.
    var presentedSinceTheft: Set<String> = []
    var keyLostAt: SimClock.Instant?
    /// When the user (or the simulation, as the user) logged out.
    var userLoggedOutAt: SimClock.Instant?
    /// Exchange requests of the device that reached the server, and when the first login was.
    var honestExchangeRequests = 0
    var firstLoginAt: SimClock.Instant?
    var suspended = false
    /// Chains the device logged in.
    var honestChains: [String] = []
    /// Tokens the device presented; when each token was issued; the newest successor issued
    /// for each token (its exchange's answer).
    var presentedByDevice: Set<String> = []
    var issuedAt: [String: SimClock.Instant] = [:]
    var successor: [String: String] = [:]
    /// The chains whose sessions ended in each launch, oldest first, as the client named them
    /// when it decided (its "session ended" diagnostic, recorded synchronously before the
    /// `loginRequired` event it publishes; the event reaches the observer later, through the
    /// session's event stream). Each `loginRequired` event takes the oldest.
    var endedChains: [Int: [String]] = [:]
    /// Bearer chains revoked because a successor the device never got was older than the
    /// retry grace when the device exchanged its parent again: the limit of R3a for Bearer
    /// chains (docs/reliability.md), not a violation; counted.
    var bearerGraceLimitChains: Set<String> = []
    /// What became of each answer that carried a successor to the device, and the tokens the
    /// store ever held.
    var answerFates: [String: AnswerFate] = [:]
    var savedTokens: Set<String> = []
    /// The attempt number of the exchange that made each successor, and the highest attempt
    /// number the device sent for each token.
    var attemptOfSuccessor: [String: Int] = [:]
    var highestAttempt: [String: Int] = [:]
}

/// What became of an answer on its way to the device.
enum AnswerFate {
    /// The client read it.
    case read
    /// The network lost it, or its process died, or a suspension held it past the client's
    /// own deadline: the world's doing.
    case lostByNetwork
    /// It arrived, and the client had cancelled its request on its own (a later attempt went
    /// out, or the exchange ended): the client's doing, excused only when a later attempt did.
    case discardedByClient
    /// It reached its process while the process was suspended, and waits for the resume: the
    /// world's doing until then (another process sharing the store that takes the claim over
    /// past a Bearer chain's grace meets the Bearer limit, as after a kill).
    case heldWhileSuspended
}

extension SimWorld {
    /// Observes one request and its answer: the log line, the tokens handed out, who presented
    /// what; then the invariant that at most one token of the chain verifies.
    func observe(_ request: HTTPRequest, _ response: HTTPResponse, from party: Party, label: String) {
        let presented = Self.presentedToken(request)
        let known = presented.flatMap { observed.tokens[$0] }
        let body = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
        let error = body?["error"] as? String
        var line = "\(label) \(request.method) \(request.path)"
        if let known { line += " \(known.chain)#\(known.generation)\(known.party == .thief ? "(thief's)" : "")" }
        if let attempt = request.header("x-baton-exchange-attempt") { line += " attempt=\(attempt)" }
        line += " => \(response.status)"
        if let error { line += " \(error)" }
        if let reason = body?["reason"] as? String { line += " (\(reason))" }
        if response.status == 200, request.path == "/v1/login" || request.path == "/v1/exchange",
           let token = body?["token"] as? String, let chainHex = body?["chain_id"] as? String, let generation = body?["generation"] as? Int {
            let chain = name(ofChain: chainHex)
            observed.tokens[token] = (chain, generation, party)
            observed.issuedAt[token] = SimClock.now
            if let presented, request.path == "/v1/exchange" {
                observed.successor[presented] = token
                observed.attemptOfSuccessor[token] = request.header("x-baton-exchange-attempt").flatMap { Int($0) }
            }
            observed.recentTokens[chainHex, default: []].append(token)
            if observed.recentTokens[chainHex]!.count > 6 { observed.recentTokens[chainHex]!.removeFirst() }
            line += " -> \(chain)#\(generation)"
            if request.path == "/v1/login", case .honest = party {
                observed.honestChains.append(chainHex)
                if observed.firstLoginAt == nil { observed.firstLoginAt = SimClock.now }
            }
        }
        log(line)
        let isProofRefusal = error == "invalid_dpop_proof" || error == "use_dpop_nonce"
        if request.path == "/v1/exchange" || request.path == "/v1/logout" {
            // A key-holding thief (it signs proofs as the device does) that moved the chain on
            // within R3b's late-attempt window gets the device's attempt answered 409 until the
            // window has passed (docs/design.md, "Older tokens too"): the device's next attempt
            // after it is the presentation that must revoke.
            let deferred = party != .thief && mix.thiefHasKey && error == "exchange_attempt_superseded"
            checkTheft(presented: presented, by: party, refused: isProofRefusal || deferred)
        }
        switch party {
        case .thief:
            if presented != nil, !isProofRefusal, observed.thiefPresentedAt == nil { observed.thiefPresentedAt = SimClock.now }
        case .honest:
            if request.path == "/v1/exchange" {
                observed.honestExchangeRequests += 1
                if let presented, let attempt = request.header("x-baton-exchange-attempt").flatMap({ Int($0) }) {
                    observed.highestAttempt[presented] = max(observed.highestAttempt[presented] ?? 0, attempt)
                }
            }
            if let presented, !mix.bound, request.path == "/v1/exchange", error == "token_reused" || body?["reason"] as? String == "reuse_detected",
               let lost = observed.successor[presented], !observed.presentedByDevice.contains(lost),
               neverReceived(lost, parent: presented),
               let issued = observed.issuedAt[lost], SimClock.now.nanoseconds - issued.nanoseconds >= 10_000_000_000,
               let chain = chainHex(of: presented) {
                observed.bearerGraceLimitChains.insert(chain)
                log("bearer limit: the successor of this token was never received and is older than the grace (excused)")
            }
            if let presented { observed.presentedByDevice.insert(presented) }
        }
        checkOneTokenVerifies()
    }

    /// Every theft ends with the chain revoked by the next presentation of either party: once
    /// the thief got a successor, and both the thief and the device have presented a token of
    /// that chain to exchange or logout since (a refused proof reaches no rule and presents
    /// nothing; verify never revokes for a consumed token, R5, since a request in flight during
    /// an exchange is normal, and the client answers its `token_superseded` with an exchange),
    /// the chain is revoked. (Whoever presents first may be served: the device's retry within R3a's window
    /// replaces the thief's successor, as the thief's replaces the device's; the other's next
    /// presentation is the fork.)
    private func checkTheft(presented: String?, by party: Party, refused: Bool) {
        guard observed.thiefSuccessor != nil, let presented, !refused, let chain = observed.thiefChain,
              chainHex(of: presented) == chain || party == .thief else { return }
        observed.presentedSinceTheft.insert(party == .thief ? "thief" : "device")
        if observed.presentedSinceTheft.count == 2, server.revocation(of: chain) == nil {
            violate("the thief and the device have both presented since the thief's exchange, and the chain is not revoked")
            observed.presentedSinceTheft = []
        }
    }

    /// At most one token per chain is accepted at any instant (asked by introspection, which
    /// presents nothing).
    private func checkOneTokenVerifies() {
        for (chainHex, tokens) in observed.recentTokens {
            let accepted = tokens.filter { server.accepts($0) }
            if accepted.count > 1 {
                let names = accepted.compactMap { observed.tokens[$0] }.map { "\($0.chain)#\($0.generation)" }
                violate("\(accepted.count) tokens of one chain verify at once: \(names) (chain \(name(ofChain: chainHex)))")
            }
        }
    }

    /// Whether the device never got `successor` (of `parent`) through no fault of its own: the
    /// network lost its answer (or its process died), or the client read it and the store
    /// refused it, or the client cancelled it because it had sent a later attempt (the
    /// schedule's short attempts are cut on purpose, so that the retry reaches the server
    /// within the grace). An answer to the device's last attempt that the client threw away is
    /// the client's fault (the last attempt sent is listened to until the exchange ends).
    func neverReceived(_ successor: String, parent: String) -> Bool {
        switch observed.answerFates[successor] {
        case .lostByNetwork, .heldWhileSuspended: return true
        case .read: return !observed.savedTokens.contains(successor)
        case .discardedByClient:
            guard let attempt = observed.attemptOfSuccessor[successor] else { return false }
            return (observed.highestAttempt[parent] ?? 0) > attempt
        case nil: return false
        }
    }

    /// The chain (hex) of a token the server handed out.
    func chainHex(of token: String) -> String? {
        guard let name = observed.tokens[token]?.chain else { return nil }
        return observed.chainNames.first { $0.value == name }?.key
    }

    /// A chain's short name in the log (its id is random per run; the name is not).
    func name(ofChain hex: String) -> String {
        if let name = observed.chainNames[hex] { return name }
        let name = "c\(observed.chainNames.count + 1)"
        observed.chainNames[hex] = name
        return name
    }

    static func presentedToken(_ request: HTTPRequest) -> String? {
        guard let authorization = request.header("authorization") else { return nil }
        for scheme in ["Bearer ", "DPoP "] where authorization.hasPrefix(scheme) { return String(authorization.dropFirst(scheme.count)) }
        return nil
    }

    /// The diagnostic the client records when a session ends (`BatonSession.apply`), with the
    /// chain the session held in its metadata.
    static let sessionEndedDiagnostic = "session ended: the user must log in again"

    /// The client's diagnostic: a session's end names its chain (the one the session held
    /// before the decision, whatever the store held or the launch presented before).
    func observe(_ diagnostic: BatonDiagnostic, of process: Int) {
        guard diagnostic.message == Self.sessionEndedDiagnostic else { return }
        observed.endedChains[process, default: []].append(diagnostic.metadata["chain"] ?? "-")
    }

    /// A session's event: a log-in-again is a violation unless a thief presented a token, the
    /// device key was lost, the user logged out, or the chain that ended met the Bearer limit.
    func observe(_ event: SessionEvent, of process: SimProcess) {
        log("p\(process.id) event \(event)")
        guard case .loginRequired(let reason) = event else { return }
        guard let chain = observed.endedChains[process.id]?.first else {
            violate("p\(process.id) (\(process.name)) logged out (\(reason.code)) without the client's diagnostic naming the chain")
            return
        }
        observed.endedChains[process.id]?.removeFirst()
        guard !process.isDead else { return }
        if observed.thiefPresentedAt != nil { return }
        if observed.keyLostAt != nil, reason == .deviceKeyLost || reason == .loggedOut { return }
        // Seeds 659, 4130973023363 and 22510557491336: the chain the launch last presented,
        // logged in to or read from the store was not always the one whose session ended.
        if observed.bearerGraceLimitChains.contains(chain) { return }
        if reason == .loggedOut || reason == .revoked(.logout), observed.userLoggedOutAt != nil { return }
        violate("p\(process.id) (\(process.name)) logged out: \(reason.code) without a thief, a lost key or the user")
    }

    /// What only the end can tell: no call still hanging, the theft detected, no honest chain
    /// revoked as reuse or fork, and in a calm world no more than 1.05 exchanges per lifetime.
    func checkAtTheEnd() {
        for process in processes where !process.isDead && process.callsInFlight > 0 {
            violate("p\(process.id) has \(process.callsInFlight) calls still in flight two minutes after the workload ended")
        }
        if observed.thiefPresentedAt == nil {
            for chain in observed.honestChains where !observed.bearerGraceLimitChains.contains(chain) {
                if let reason = server.revocation(of: chain), reason == "reuse_detected" || reason == "fork_detected" {
                    violate("\(name(ofChain: chain)) revoked (\(reason)) without a thief")
                }
            }
        }
        if mix.isCalm, let first = observed.firstLoginAt {
            let lifetimes = Double((SimClock.now.nanoseconds - first.nanoseconds) / 1_000_000) / 1000
                / Double(SimServer.policy.tokenTTL.components.seconds)
            let perLifetime = Double(observed.honestExchangeRequests) / max(1, lifetimes.rounded(.down))
            log("calm: \(observed.honestExchangeRequests) exchanges in \(String(format: "%.2f", lifetimes)) lifetimes")
            if perLifetime > 1.05 { violate("\(String(format: "%.2f", perLifetime)) exchanges per token lifetime without faults (at most 1.05)") }
        }
    }
}
