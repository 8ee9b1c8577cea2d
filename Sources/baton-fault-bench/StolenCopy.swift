/// A theft as the benchmark scores it: the chain copied, and whether the server stopped it.
protocol StolenCopy: AnyObject, Sendable {
    /// The chain of the copied bundle.
    var chainID: String { get }
    /// Whether the server refused the copy for want of the device key (nothing changed): the
    /// victim's chain was never touched, so a logout of it is false.
    var wasRefusedWithoutKey: Bool { get }
    /// Whether the theft came to nothing: the chain revoked under the thief, or the copy refused.
    var wasStopped: Bool { get }
    /// How the thief's use ended, for a theft the server missed.
    var outcome: String { get }
    /// Ends the thief's use now (the run is over).
    func stop()
}
