import Foundation

/// The session's decisions as a pure function of (state, input): no network, no store, no
/// clock of its own. `BatonSession` executes the actions. Tests call it directly.
///
/// The invariants it keeps:
/// * one exchange at a time: while one runs, everyone who needs a token waits for it;
/// * an answer about a token that is no longer the held one never touches the held bundle
///   (a late 401 for an old token is answered by replaying with the newer one);
/// * only the server's final answers end the session; a failed exchange keeps the bundle.
struct SessionRules: Sendable {
    /// How long before its expiry a token is treated as expired (exchanged before sending).
    var expiryMargin: TimeInterval

    /// A decision: the next state and what to do.
    struct Transition<Exchange: Sendable> {
        var state: SessionState<Exchange>
        var actions: [SessionAction<Exchange>]
    }

    /// Decides what `input` does in `state`. `startExchange` is called (at most once) when an
    /// exchange of the given bundle must begin; its handle goes into the `exchanging` state.
    func decide<Exchange: Sendable>(_ state: SessionState<Exchange>, _ input: SessionInput,
                                    startExchange: (TokenBundle) -> Exchange) -> Transition<Exchange> {
        switch input {
        case .restored(let bundle):
            guard case .uninitialized = state else { return Transition(state: state, actions: []) }
            return Transition(state: bundle.map { .active($0) } ?? .loggedOut(.notLoggedIn), actions: [])

        case .tokenNeeded(let now):
            switch state {
            case .uninitialized: return Transition(state: state, actions: [.fail(.loginRequired(.notLoggedIn))])
            case .loggedOut(let reason): return Transition(state: state, actions: [.fail(.loginRequired(reason))])
            case .exchanging(_, let exchange): return Transition(state: state, actions: [.wait(exchange)])
            case .active(let bundle):
                guard bundle.isExpired(at: now, margin: expiryMargin) else { return Transition(state: state, actions: [.send(bundle)]) }
                return exchange(bundle, startExchange)
            }

        case .exchangeAwaited:
            switch state {
            case .uninitialized: return Transition(state: state, actions: [.fail(.loginRequired(.notLoggedIn))])
            case .loggedOut(let reason): return Transition(state: state, actions: [.fail(.loginRequired(reason))])
            case .exchanging(_, let exchange): return Transition(state: state, actions: [.wait(exchange)])
            case .active(let bundle): return Transition(state: state, actions: [.send(bundle)])
            }

        case .exchangeRequested:
            switch state {
            case .uninitialized, .loggedOut: return Transition(state: state, actions: [])
            case .exchanging(_, let exchange): return Transition(state: state, actions: [.wait(exchange)])
            case .active(let bundle): return exchange(bundle, startExchange)
            }

        case .rejected(let token, let rejection):
            return rejected(state, token: token, rejection, startExchange: startExchange)

        case .exchangeFinished(let old, let outcome):
            // Only the exchange the state is waiting for may change it.
            guard case .exchanging(let bundle, _) = state, bundle.token == old else { return Transition(state: state, actions: []) }
            switch outcome {
            case .exchanged(let successor), .adopted(let successor):
                return Transition(state: .active(successor), actions: [.publish(.refreshed(generation: successor.generation))])
            case .loginRequired(let reason):
                return Transition(state: .loggedOut(reason), actions: [.publish(.loginRequired(reason))])
            case .failed:
                return Transition(state: .active(bundle), actions: [])
            }

        case .successorSaved(let old, let successor):
            // Only while the session still holds `old`: anything newer (a login, an adoption) wins.
            guard case .active(let bundle) = state, bundle.token == old else { return Transition(state: state, actions: []) }
            return Transition(state: .active(successor), actions: [.publish(.refreshed(generation: successor.generation))])

        case .loggedIn(let bundle):
            return Transition(state: .active(bundle), actions: [.publish(.loggedIn)])

        case .loggedOut:
            return Transition(state: .loggedOut(.loggedOut), actions: [.publish(.loggedOut)])
        }
    }

    /// A 401 for `token`. Only when `token` is the held one does it start an exchange or end
    /// the session; otherwise the request is replayed with what is held now.
    private func rejected<Exchange: Sendable>(_ state: SessionState<Exchange>, token: String, _ rejection: Rejection,
                                              startExchange: (TokenBundle) -> Exchange) -> Transition<Exchange> {
        switch state {
        case .uninitialized: return Transition(state: state, actions: [.fail(.loginRequired(.notLoggedIn))])
        case .loggedOut(let reason): return Transition(state: state, actions: [.fail(.loginRequired(reason))])
        case .exchanging(_, let exchange):
            // Whether the answer is about the token being exchanged or an older one, the
            // exchange's outcome decides (it may be the server's final answer too).
            return Transition(state: state, actions: [.wait(exchange)])
        case .active(let bundle) where bundle.token != token:
            // Another task exchanged meanwhile (or logged in again): replay with the newer token.
            return Transition(state: state, actions: [.send(bundle)])
        case .active(let bundle):
            switch rejection {
            case .expired:
                return exchange(bundle, startExchange)
            case .superseded:
                // Our held token was exchanged, but not by this process: another process
                // sharing the store did (the exchange adopts its successor from the store), or
                // our own exchange's answer was lost before it was stored (the server's R3a
                // retry recovers it), or someone else holds a copy (the server detects reuse).
                return exchange(bundle, startExchange)
            case .loginRequired(let reason):
                return Transition(state: .loggedOut(reason), actions: [
                    .clearStore(ifHolding: token), .publish(.loginRequired(reason)), .fail(.loginRequired(reason)),
                ])
            }
        }
    }

    /// Starts the exchange of `bundle`: the state holds its handle before anyone awaits it.
    private func exchange<Exchange: Sendable>(_ bundle: TokenBundle, _ startExchange: (TokenBundle) -> Exchange) -> Transition<Exchange> {
        let handle = startExchange(bundle)
        return Transition(state: .exchanging(bundle, handle), actions: [.wait(handle)])
    }
}

extension SessionRules.Transition: Equatable where Exchange: Equatable {}
