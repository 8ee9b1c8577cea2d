import BatonAPI
import BatonCore
import BatonDPoP
import BatonStore

extension ServeCommand {
    /// The device-binding options of `serve` (RFC 9449 DPoP, docs/dpop.md): the mode, one proof
    /// checker for the process (its replay cache), its `iat` window and nonce mode, and the
    /// public URL. The nonce key is `--dpop-nonce-key-file`'s, or `derivedNonceKey` (from the
    /// token key, so that every instance sharing the token key accepts every other's nonces).
    /// - Throws: `StoreError` when the nonce key file cannot be read (missing, unsafe mode, not a key).
    static func dpopOptions(_ settings: Settings, derivedNonceKey: [UInt8]) throws(StoreError) -> DPoPOptions {
        var policy = ProofPolicy()
        policy.maximumAge = settings.dpopWindow
        if settings.dpopNonce != .off {
            let key = try settings.dpopNonceKeyFile.map { path throws(StoreError) in try KeyFile.load(at: path, create: false).bytes } ?? derivedNonceKey
            let source = NonceSource(key: key)
            policy.nonces = settings.dpopNonce == .always ? .always(source) : .whenClockIsOff(source)
        }
        var options = DPoPOptions()
        options.mode = settings.dpop
        options.checker = ProofChecker(policy: policy, replayCache: ReplayCache(capacity: settings.dpopReplayCache, share: settings.dpopReplayShare,
                                                                                window: policy.replayWindow))
        options.publicURL = settings.publicURL
        return options
    }
}
