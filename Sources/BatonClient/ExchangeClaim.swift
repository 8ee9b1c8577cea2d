import Foundation

/// "This session is exchanging the stored token": written to the store (under its lock) before
/// the exchange goes out, removed with the successor. Sessions sharing the store (an app and its
/// extensions, two processes on one file) wait for a live claim instead of exchanging the same
/// token a second time, and take over a stale one (its owner died or was suspended): the store's
/// lock itself is held only to read and write, never across the network.
public struct ExchangeClaim: Codable, Sendable, Equatable {
    /// The claiming session (random per `BatonSession`).
    public var owner: String
    /// The token being exchanged (its chain and generation; never the token itself twice).
    public var chainID: String
    public var generation: Int
    /// When the claim was made, on the device's wall clock (every sharer reads the same one).
    public var startedAt: Date
    /// How long the claim is respected; after that, another session may take over.
    public var lease: TimeInterval

    /// A claim from its parts.
    public init(owner: String, chainID: String, generation: Int, startedAt: Date, lease: TimeInterval) {
        self.owner = owner
        self.chainID = chainID
        self.generation = generation
        self.startedAt = startedAt
        self.lease = lease
    }

    /// Whether this claim is about `bundle` and still within its lease at `now`.
    func isLive(for bundle: TokenBundle, at now: Date) -> Bool {
        chainID == bundle.chainID && generation == bundle.generation
            && now >= startedAt.addingTimeInterval(-1) && now < startedAt.addingTimeInterval(lease)
    }
}
