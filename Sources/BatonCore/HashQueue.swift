/// Who a password hash is computed for: the client's address and, for a step-up, its chain.
package struct HashClaimant: Sendable, Equatable {
    package var address: String?
    package var chain: ChainID?

    package init(address: String?, chain: ChainID? = nil) {
        self.address = address
        self.chain = chain
    }

    /// An operator's command (`baton admin user add`): no address, no share to respect.
    package static let local = HashClaimant(address: nil)
}

/// The places in the password-hash queue (hashes running and waiting), and who holds them,
/// so that one chain or one address cannot take the capacity others' logins need
/// (docs/security.md, finding 5). Pure; `PasswordHasher` guards it with a lock.
///
/// - the queue holds `capacity` callers at most; beyond, `unavailable` (503) at once;
/// - while it is less than half full anyone may queue (one client's parallel logins on a
///   quiet server are not refused); from half full on, an address group (`AddressGroup`:
///   IPv6 by /64) that holds a quarter of the places gets no more;
/// - the last quarter of the places is kept for address groups that hold none yet, so a
///   few busy addresses cannot take every place a newcomer's login needs;
/// - one chain holds at most one place: a step-up runs one password check at a time.
///
/// What does not fit the caller's address's share is a 503 `unavailable` with `Retry-After`
/// for that caller (busy: nothing failed, nothing is counted against the address); a second
/// check for a busy chain is that chain's `too_many_attempts` (429). A 503 for other
/// addresses needs many addresses at once, which is the gateway's rate limits' job.
package struct HashQueue: Sendable {
    package let capacity: Int
    package let perAddress: Int
    /// Places only an address group holding none may take.
    package let reserved: Int
    package private(set) var held = 0
    private var byAddress: [String: Int] = [:]
    private var byChain: Set<ChainID> = []

    /// Why a caller gets no place.
    package enum Refusal: Error, Equatable, Sendable {
        /// Every place is taken.
        case full
        /// The caller's address holds its whole share.
        case addressShareTaken
        /// The chain already has a password check queued or running.
        case chainBusy
    }

    package init(capacity: Int) {
        self.capacity = max(1, capacity)
        self.perAddress = max(1, capacity / 4)
        self.reserved = capacity >= 4 ? capacity / 4 : 0
    }

    /// Takes a place for `claimant`, or says why not (nothing taken then).
    package mutating func enter(_ claimant: HashClaimant) throws(Refusal) {
        if let chain = claimant.chain, byChain.contains(chain) { throw .chainBusy }
        let group = claimant.address.map(AddressGroup.key)
        let holding = group.map { byAddress[$0, default: 0] } ?? 0
        if group != nil, holding >= perAddress, held >= capacity / 2 { throw .addressShareTaken }
        guard held < capacity else { throw .full }
        // The reserve: an address group that already holds a place waits its turn.
        if holding > 0, held >= capacity - reserved { throw .addressShareTaken }
        held += 1
        if let group { byAddress[group, default: 0] += 1 }
        if let chain = claimant.chain { byChain.insert(chain) }
    }

    /// Gives back the place `enter` took for `claimant`.
    package mutating func leave(_ claimant: HashClaimant) {
        held -= 1
        if let group = claimant.address.map(AddressGroup.key) {
            let count = byAddress[group, default: 1] - 1
            byAddress[group] = count > 0 ? count : nil
        }
        if let chain = claimant.chain { byChain.remove(chain) }
    }
}
