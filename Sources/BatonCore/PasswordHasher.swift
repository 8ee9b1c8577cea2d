import Dispatch
import Synchronization

/// Hashes and checks passwords with argon2id (libargon2), and bounds how many hashes run
/// at once so that a flood of logins cannot pin every core. Each hash maps its working
/// memory and unmaps it when done (`Argon2id`), so logins leave nothing resident.
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
    /// The callers holding or waiting for a slot, at most 8 per slot; more are refused at once
    /// (a login flood costs neither CPU nor a worker thread held for `queueTimeout`), and one
    /// address or chain cannot take the places others need (`HashQueue`).
    private let queue: Mutex<HashQueue>
    /// A hash of a random password, checked for unknown users so that they cost the same.
    private let decoy: Argon2Hash

    /// - Parameters:
    ///   - concurrency: hashes allowed to run at once.
    ///   - queueTimeout: how long a caller waits for a slot before `unavailable`.
    ///   - maxQueued: callers waiting for a slot at most (default: 8 per slot); beyond, `unavailable` at once.
    package init(parameters: Parameters = Parameters(), concurrency: Int, queueTimeout: Duration = .seconds(5), maxQueued: Int? = nil) {
        self.parameters = parameters
        self.slots = DispatchSemaphore(value: max(1, concurrency))
        self.queueTimeout = queueTimeout
        self.queue = Mutex(HashQueue(capacity: maxQueued ?? 8 * max(1, concurrency)))
        self.decoy = Self.derive(Base64URL.encode(SecureRandom.bytes(24)), parameters)
    }

    /// An argon2id encoded string (`$argon2id$v=19$m=…`) for `password`, computed in a place
    /// of the queue taken for `claimant`.
    /// - Throws: `.invalidArgument` for a password that breaks `PasswordRules`, `.unavailable` when every slot stays busy
    ///   or the claimant's address holds its whole share of the queue, `.tooManyAttempts` when its chain has a check queued.
    package func hash(_ password: String, for claimant: HashClaimant = .local) throws(BatonError) -> String {
        try PasswordRules.validate(password)
        return try withSlot(for: claimant) { Self.derive(password, parameters).text }
    }

    /// Whether `password` matches `encoded`; with `encoded` nil (unknown user) the same work
    /// is done against a decoy and the answer is false.
    /// - Throws: as `hash`.
    package func verify(_ password: String, against encoded: String?, for claimant: HashClaimant = .local) throws(BatonError) -> Bool {
        let candidate = password.utf8.count <= PasswordRules.maximumLength ? password : ""
        // A stored string that does not parse matches nothing, after the same work as any other.
        let stored = encoded.flatMap(Argon2Hash.init(parsing:))
        let target = stored ?? decoy
        return try withSlot(for: claimant) {
            guard let tag = Argon2id.derive(candidate, salt: target.salt, memoryKiB: target.memoryKiB, iterations: target.iterations,
                                            parallelism: target.parallelism, length: target.hash.count) else { return false }
            let matches = Digest.constantTimeEquals(tag, target.hash)
            return stored != nil && matches && candidate == password
        }
    }

    private func withSlot<T>(for claimant: HashClaimant, _ body: () -> T) throws(BatonError) -> T {
        // The queue's places count callers that hold a slot or wait for one.
        let refusal = queue.withLock { queue -> HashQueue.Refusal? in
            do throws(HashQueue.Refusal) { try queue.enter(claimant) } catch { return error }
            return nil
        }
        switch refusal {
        case nil: break
        case .full?: throw .unavailable("too many password checks queued")
        // Busy, not failed: many users behind one address (a carrier NAT at the morning peak)
        // are told to retry (503 with Retry-After), never "too many failed attempts" (issue 28).
        case .addressShareTaken?: throw .unavailable("the address's share of password checks is queued")
        case .chainBusy?: throw .confirmationInProgress
        }
        defer { queue.withLock { $0.leave(claimant) } }
        let deadline = DispatchTime.now() + .milliseconds(Int(queueTimeout.wholeMilliseconds))
        guard slots.wait(timeout: deadline) == .success else {
            throw .unavailable("too many password checks in progress")
        }
        defer { slots.signal() }
        return body()
    }

    /// A new salted hash of `password`.
    private static func derive(_ password: String, _ p: Parameters) -> Argon2Hash {
        let salt = SecureRandom.bytes(16)
        let tag = Argon2id.derive(password, salt: salt, memoryKiB: p.memoryKiB, iterations: p.iterations, parallelism: p.parallelism, length: 32)
        guard let tag else { preconditionFailure("argon2id refused its own parameters: \(p)") }
        return Argon2Hash(memoryKiB: p.memoryKiB, iterations: p.iterations, parallelism: p.parallelism, salt: salt, hash: tag)
    }
}
