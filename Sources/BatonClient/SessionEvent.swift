/// What happened to the session, published on `BatonSession.events` for the UI.
public enum SessionEvent: Sendable, Equatable {
    /// A login succeeded.
    case loggedIn
    /// The token was exchanged for its successor (by this process, or adopted from another
    /// process sharing the store). Nothing for the UI to do.
    case refreshed(generation: Int)
    /// The session is over and the credentials are cleared: show the login screen with the
    /// message for `reason`.
    case loginRequired(LoginRequiredReason)
    /// The user logged out.
    case loggedOut
}

/// Where the session stands, as `restore()` reports it.
public enum SessionStatus: Sendable, Equatable {
    /// A bundle is held; requests will be authorized.
    case loggedIn(chainID: String, generation: Int)
    /// No bundle: show the login screen.
    case loggedOut(LoginRequiredReason)
    /// The store cannot be read now (a locked Keychain, a file the process may not open): not
    /// logged out, show no login screen; the session reads the store again at its next call.
    case credentialsUnavailable
}
