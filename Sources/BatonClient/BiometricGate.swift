import Foundation
#if canImport(LocalAuthentication)
import LocalAuthentication
#endif

/// An optional Face ID / Touch ID confirmation before the app's requests use the session's
/// token (issue 42), as Auth0.swift's `enableBiometrics` offers: set
/// `BatonConfiguration.biometrics`, and `send` and `authorize` ask the user (once for every
/// request waiting at that moment) when the last confirmation is older than `validFor`.
///
/// A cancelled or failed confirmation is `BatonClientError.userAuthentication`: the request is
/// not sent, nothing is logged out, and the next request asks again. The session's own work
/// (exchanges, `refresh(within:)`, logout) never asks: the token does not reach the app there.
/// On Apple platforms the system's `LAContext` asks (`.deviceOwnerAuthenticationWithBiometrics`,
/// or `.deviceOwnerAuthentication` when the passcode may stand in); elsewhere (Linux) there is
/// no biometric hardware to ask, and a session configured with a gate refuses every request
/// with `.userAuthentication` saying so (it never silently skips the gate).
public struct BiometricGate: Sendable {
    /// The reason the system prompt shows (`localizedReason`).
    public var reason: String
    /// How long one confirmation lets requests use the token without asking again.
    public var validFor: Duration
    /// Whether the device passcode may stand in when Face ID or Touch ID fails or is not set up.
    public var allowsPasscode: Bool
    /// Asks the user; the platform's `LAContext` in apps, another in tests.
    let evaluate: @Sendable (BiometricGate) async -> BiometricOutcome

    /// A gate asking with the platform's system prompt.
    public init(reason: String, validFor: Duration = .seconds(300), allowsPasscode: Bool = true) {
        self.init(reason: reason, validFor: validFor, allowsPasscode: allowsPasscode, evaluate: Self.platformEvaluate)
    }

    /// A gate asking with `evaluate` (tests).
    init(reason: String, validFor: Duration, allowsPasscode: Bool, evaluate: @escaping @Sendable (BiometricGate) async -> BiometricOutcome) {
        self.reason = reason
        self.validFor = validFor
        self.allowsPasscode = allowsPasscode
        self.evaluate = evaluate
    }

    #if canImport(LocalAuthentication)
    /// The system prompt (`LAContext.evaluatePolicy`).
    static func platformEvaluate(_ gate: BiometricGate) async -> BiometricOutcome {
        let policy: LAPolicy = gate.allowsPasscode ? .deviceOwnerAuthentication : .deviceOwnerAuthenticationWithBiometrics
        let context = LAContext()
        var error: NSError?
        guard context.canEvaluatePolicy(policy, error: &error) else {
            return .unavailable("Face ID or Touch ID cannot be used now: \(error?.localizedDescription ?? "not available")")
        }
        return await withCheckedContinuation { continuation in
            context.evaluatePolicy(policy, localizedReason: gate.reason) { success, error in
                if success { return continuation.resume(returning: .confirmed) }
                switch (error as? LAError)?.code {
                case .userCancel?, .appCancel?, .systemCancel?, .userFallback?:
                    continuation.resume(returning: .cancelled)
                default:
                    continuation.resume(returning: .failed(error?.localizedDescription ?? "not confirmed"))
                }
            }
        }
    }
    #else
    /// No biometric hardware to ask: refused, never skipped.
    static func platformEvaluate(_ gate: BiometricGate) async -> BiometricOutcome {
        .unavailable("Face ID and Touch ID exist on Apple platforms only; remove BatonConfiguration.biometrics on this platform")
    }
    #endif
}

/// What one confirmation came to.
enum BiometricOutcome: Sendable, Equatable {
    case confirmed
    /// The user (or the system, or the app) cancelled the prompt.
    case cancelled
    case failed(String)
    case unavailable(String)
}

extension BatonSession {
    /// Asks the user through `configuration.biometrics` when the last confirmation is older than
    /// its `validFor`; requests waiting at the same moment share one prompt.
    /// - Throws: `.userAuthentication` when not confirmed (nothing else changes).
    func confirmUserIfNeeded() async throws(BatonClientError) {
        guard let gate = configuration.biometrics else { return }
        if let confirmedAt = biometricConfirmedAt, ContinuousClock.now - confirmedAt < gate.validFor { return }
        let prompt: Task<BiometricOutcome, Never>
        if let pending = biometricPrompt {
            prompt = pending
        } else {
            prompt = Task { await gate.evaluate(gate) }
            biometricPrompt = prompt
        }
        let outcome = await prompt.value
        if biometricPrompt == prompt { biometricPrompt = nil }
        switch outcome {
        case .confirmed:
            biometricConfirmedAt = ContinuousClock.now
        case .cancelled:
            throw .userAuthentication("the user cancelled the Face ID or Touch ID prompt; nothing changed (ask again)")
        case .failed(let why), .unavailable(let why):
            throw .userAuthentication(why)
        }
    }
}
