import Foundation

/// The session's one state, owned by `BatonSession` (an actor). `Exchange` is the handle of
/// the in-flight exchange: a `Task` in the actor, a plain number in the rules' tests.
enum SessionState<Exchange: Sendable>: Sendable {
    /// The store was not read yet.
    case uninitialized
    /// No bundle; requests fail with `loginRequired(reason)`.
    case loggedOut(LoginRequiredReason)
    /// A bundle is held and no exchange runs.
    case active(TokenBundle)
    /// The bundle's token is being exchanged; every caller that needs a token awaits `Exchange`.
    case exchanging(TokenBundle, Exchange)

    /// The bundle held, if any.
    var bundle: TokenBundle? {
        switch self {
        case .active(let bundle), .exchanging(let bundle, _): bundle
        case .uninitialized, .loggedOut: nil
        }
    }
}

extension SessionState: Equatable where Exchange: Equatable {}

/// What the session learns; the rules turn each into a new state and actions.
enum SessionInput: Sendable, Equatable {
    /// The store was read (at launch, or lazily before the first request).
    case restored(TokenBundle?)
    /// A request is about to be sent and needs a token.
    case tokenNeeded(now: Date)
    /// A request waited for an exchange that succeeded: it goes out with the token held now,
    /// fresh by definition (no second expiry check, which a token lifetime shorter than the
    /// expiry margin would turn into an endless loop of exchanges).
    case exchangeAwaited
    /// The app asked for an exchange now (`restore(exchangeNow: true)`).
    case exchangeRequested
    /// The gateway (or verify) answered 401 for `token`.
    case rejected(token: String, Rejection)
    /// The exchange of `old` ended.
    case exchangeFinished(old: String, ExchangeOutcome)
    /// A successor of `old` that the store had refused was saved now: it replaces `old`.
    case successorSaved(old: String, TokenBundle)
    /// A login succeeded; its bundle is already persisted.
    case loggedIn(TokenBundle)
    /// The user logged out.
    case loggedOut
}

/// A 401 answer that concerns the session (any other 401 goes back to the caller as it is).
enum Rejection: Sendable, Equatable {
    /// `token_expired`: exchange, then replay.
    case expired
    /// `token_superseded`: the token was exchanged already; replay with the successor.
    case superseded
    /// A log-in-again answer.
    case loginRequired(LoginRequiredReason)

    /// The rejection for a server error, or nil when the error is not about the session.
    init?(_ error: ServerError) {
        switch error.code {
        case "token_expired": self = .expired
        case "token_superseded": self = .superseded
        default:
            guard let reason = LoginRequiredReason(error) else { return nil }
            self = .loginRequired(reason)
        }
    }
}

/// How one exchange ended; every caller that awaited it gets the same outcome.
enum ExchangeOutcome: Sendable, Equatable {
    /// The server issued the successor; it is persisted.
    case exchanged(TokenBundle)
    /// Another process sharing the store had exchanged already; its successor is adopted.
    case adopted(TokenBundle)
    /// The server's final answer: log in again. The store is cleared.
    case loginRequired(LoginRequiredReason)
    /// No final answer (transport failures past the retry bound, 5xx, 429). The session keeps
    /// its bundle; the next request tries again with the same token (R3a makes that safe).
    case failed(BatonClientError)
}

/// What the actor does after a decision.
enum SessionAction<Exchange: Sendable>: Sendable {
    /// Send (or replay) the request with this bundle's token.
    case send(TokenBundle)
    /// Wait for the in-flight exchange, then ask again.
    case wait(Exchange)
    /// Fail the request.
    case fail(BatonClientError)
    /// Publish an event for the UI.
    case publish(SessionEvent)
    /// Clear the stored bundle, but only if the store still holds this token (another process
    /// may have stored a newer one).
    case clearStore(ifHolding: String)
}

extension SessionAction: Equatable where Exchange: Equatable {}
