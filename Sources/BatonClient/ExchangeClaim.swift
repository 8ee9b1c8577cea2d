import Foundation

/// "This session is exchanging the stored token": written to the store (under its lock) before
/// the exchange goes out, renewed before each attempt, removed with the successor. Sessions
/// sharing the store (an app and its extensions, two processes on one file) wait for a live
/// claim instead of exchanging the same token a second time, and take over a stale one (its
/// owner died or was suspended past its lease): the store's lock itself is held only to read
/// and write, never across the network.
public struct ExchangeClaim: Codable, Sendable, Equatable {
    /// The claiming session (random per `BatonSession`).
    public var owner: String
    /// The token being exchanged (its chain and generation; never the token itself twice).
    public var chainID: String
    public var generation: Int
    /// When the claim was made or last renewed, on the device's wall clock (for claims written
    /// before `renewedAtUptime` existed, and for people reading the store).
    public var startedAt: Date
    /// How long after `renewedAtUptime` (or `startedAt`) the claim is respected; after that,
    /// another session may take over. It covers the attempt about to start.
    public var lease: TimeInterval
    /// `DeviceUptime` when the claim was made or last renewed: the lease runs on this clock,
    /// which the wall clock's jumps do not move (M5). Nil in claims written before it existed.
    public var renewedAtUptime: Double?
    /// `DeviceUptime` when this token's first claim was made; a takeover keeps it, so that the
    /// taking-over session knows how much of the server's retry grace is left (H1).
    public var firstClaimedAtUptime: Double?
    /// The process and launch of the claiming session, so that another can tell a dead owner's
    /// claim from a live one's (`ClaimOwnerLiveness`). Nil in claims written before it existed.
    public var ownerProcess: ClaimOwner?
    /// The highest exchange attempt number (`X-Baton-Exchange-Attempt`, R3b) sent or about to be
    /// sent for this token by any session sharing the store: the next attempt, whoever sends it,
    /// takes a higher one. Nil in claims written before it existed.
    public var lastAttempt: Int?

    /// A claim from its parts.
    public init(owner: String, chainID: String, generation: Int, startedAt: Date, lease: TimeInterval,
                renewedAtUptime: Double? = nil, firstClaimedAtUptime: Double? = nil, ownerProcess: ClaimOwner? = nil,
                lastAttempt: Int? = nil) {
        self.owner = owner
        self.chainID = chainID
        self.generation = generation
        self.startedAt = startedAt
        self.lease = lease
        self.renewedAtUptime = renewedAtUptime
        self.firstClaimedAtUptime = firstClaimedAtUptime
        self.ownerProcess = ownerProcess
        self.lastAttempt = lastAttempt
    }

    /// Whether this claim is about `bundle` and still within its lease, at wall time `now` and
    /// device uptime `uptime`. With an uptime reading, only the uptime counts: a reading later
    /// than `uptime` is from an earlier boot (stale).
    func isLive(for bundle: TokenBundle, at now: Date, uptime: Double) -> Bool {
        guard chainID == bundle.chainID && generation == bundle.generation else { return false }
        if let renewed = renewedAtUptime { return uptime >= renewed && uptime < renewed + lease }
        return now >= startedAt.addingTimeInterval(-1) && now < startedAt.addingTimeInterval(lease)
    }

    /// Whether another session must respect this claim on `bundle` now: live (`isLive`), and
    /// its owner not certainly gone (`ClaimOwnerLiveness`: a relaunch need not wait out the
    /// lease of the launch that was killed mid-exchange).
    func isRespected(for bundle: TokenBundle, at now: Date, uptime: Double, liveness: ClaimOwnerLiveness) -> Bool {
        isLive(for: bundle, at: now, uptime: uptime) && !liveness.isCertainlyGone(ownerProcess, session: owner)
    }

    /// Whether the claim is about `bundle`'s token (live or not).
    func isAbout(_ bundle: TokenBundle) -> Bool { chainID == bundle.chainID && generation == bundle.generation }
}
