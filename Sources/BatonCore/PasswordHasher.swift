import CArgon2
import Dispatch
import Synchronization

/// Hashes and checks passwords with argon2id (libargon2), and bounds how many hashes run
/// at once so that a flood of logins cannot pin every core.
package final class PasswordHasher: Sendable {
    /// argon2id cost. The default is OWASP's first recommendation: m=19 MiB, t=2, p=1.
    package struct Parameters: Sendable, Equatable {
        package var memoryKiB: UInt32 = 19 * 1024
        package var iterations: UInt32 = 2
        package var parallelism: UInt32 = 1
        package init() {}
    }

    package let parameters: Parameters
    private let slots: DispatchSemaphore
    private let queueTimeout: Duration
    /// Callers waiting for a slot at most; more are refused at once (a login flood costs
    /// neither CPU nor a worker thread held for `queueTimeout`).
    private let maxQueued: Int
    private let queued = Atomic<Int>(0)
    /// A hash of a random password, checked for unknown users so that they cost the same.
    private let decoy: String

    /// - Parameters:
    ///   - concurrency: hashes allowed to run at once.
    ///   - queueTimeout: how long a caller waits for a slot before `unavailable`.
    ///   - maxQueued: callers waiting for a slot at most (default: 8 per slot); beyond, `unavailable` at once.
    package init(parameters: Parameters = Parameters(), concurrency: Int, queueTimeout: Duration = .seconds(5), maxQueued: Int? = nil) {
        self.parameters = parameters
        self.slots = DispatchSemaphore(value: max(1, concurrency))
        self.queueTimeout = queueTimeout
        self.maxQueued = maxQueued ?? 8 * max(1, concurrency)
        self.decoy = Self.encode(Base64URL.encode(SecureRandom.bytes(24)), parameters)
    }

    /// An argon2id encoded string (`$argon2id$v=19$m=…`) for `password`.
    /// - Throws: `.invalidArgument` for a password that breaks `PasswordRules`, `.unavailable` when every slot stays busy.
    package func hash(_ password: String) throws(BatonError) -> String {
        try PasswordRules.validate(password)
        return try withSlot { Self.encode(password, parameters) }
    }

    /// Whether `password` matches `encoded`; with `encoded` nil (unknown user) the same work
    /// is done against a decoy and the answer is false.
    package func verify(_ password: String, against encoded: String?) throws(BatonError) -> Bool {
        let candidate = password.utf8.count <= PasswordRules.maximumLength ? password : ""
        return try withSlot {
            // argon2_verify recomputes the hash and compares in constant time (argon2_compare).
            let matches = argon2id_verify(encoded ?? decoy, candidate, candidate.utf8.count) == ARGON2_OK.rawValue
            return encoded != nil && matches && candidate == password
        }
    }

    private func withSlot<T>(_ body: () -> T) throws(BatonError) -> T {
        // The queue bound counts callers that hold a slot or wait for one.
        guard queued.add(1, ordering: .acquiringAndReleasing).newValue <= maxQueued else {
            queued.subtract(1, ordering: .acquiringAndReleasing)
            throw .unavailable("too many password checks queued")
        }
        defer { queued.subtract(1, ordering: .acquiringAndReleasing) }
        let deadline = DispatchTime.now() + .milliseconds(Int(queueTimeout.wholeMilliseconds))
        guard slots.wait(timeout: deadline) == .success else {
            throw .unavailable("too many password checks in progress")
        }
        defer { slots.signal() }
        return body()
    }

    private static func encode(_ password: String, _ p: Parameters) -> String {
        let salt = SecureRandom.bytes(16)
        let hashLength = 32
        let encodedLength = argon2_encodedlen(p.iterations, p.memoryKiB, p.parallelism, UInt32(salt.count), UInt32(hashLength), Argon2_id)
        var encoded = [CChar](repeating: 0, count: encodedLength)
        let status = argon2id_hash_encoded(
            p.iterations, p.memoryKiB, p.parallelism, password, password.utf8.count,
            salt, salt.count, hashLength, &encoded, encodedLength)
        precondition(status == ARGON2_OK.rawValue, "argon2id_hash_encoded failed: \(status)")
        return String(decoding: encoded.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
