extension LoginRequiredReason {
    /// A default English sentence for the login screen. Apps localize their own; this is the
    /// reference for what each reason means to the user.
    public var defaultMessage: String {
        switch self {
        case .notLoggedIn: "Please log in."
        case .loggedOut: "You have logged out."
        case .tokenReused: "Your session was ended for your security. Please log in again."
        case .sessionExpired: "Your session has reached its time limit. Please log in again."
        case .exchangeWindowClosed: "You have been away for a while. Please log in again."
        case .tokenInvalid: "Your session is no longer valid. Please log in again."
        case .deviceKeyLost: "This device's sign-in key is gone (restored from a backup?). Please log in again."
        case .revoked(let reason):
            switch reason {
            case .reuseDetected, .forkDetected: "Your session was ended for your security. Please log in again."
            case .loggedInElsewhere: "You logged in on another device."
            case .evicted: "You logged in on too many devices; this one was logged out."
            case .passwordChanged: "Your password was changed. Please log in with the new one."
            case .confirmFailed: "Too many wrong passwords. Please log in again."
            case .userDisabled: "Your account is disabled."
            case .signedOut: "You signed this device out from another device."
            case .logout: "You have logged out."
            default: "Your session was ended. Please log in again."
            }
        }
    }
}

extension LoginRequiredReason {
    /// The reason as a stable code for logs and diagnostics: the server's error code
    /// (`token_reused`, `chain_revoked:reuse_detected`, ...) or the client's own
    /// (`not_logged_in`, `logged_out`, `device_key_lost`).
    public var code: String {
        switch self {
        case .notLoggedIn: "not_logged_in"
        case .loggedOut: "logged_out"
        case .tokenReused: "token_reused"
        case .revoked(let reason): "chain_revoked:\(reason.rawValue)"
        case .sessionExpired: "session_expired"
        case .exchangeWindowClosed: "exchange_window_closed"
        case .tokenInvalid: "token_invalid"
        case .deviceKeyLost: "device_key_lost"
        }
    }
}
