import BatonAPI
import BatonCore
import BatonDPoP
import BatonStore

extension ServeCommand {
    /// The device-binding options of `serve` (RFC 9449 DPoP, docs/dpop.md): the mode, one proof
    /// checker for the process (its replay cache), its `iat` window and nonce mode, and the
    /// public URL. `nonceKey` is `--dpop-nonce-key-file`'s (`nonceKey(_:)`), or the one derived
    /// from the token key (so that every instance sharing the token key accepts every other's nonces).
    /// `previousNonceKey`: `--dpop-previous-nonce-key-file`'s, whose nonces stay valid for one
    /// nonce lifetime after `now` (the start: the rotation as this instance sees it).
    static func dpopOptions(_ settings: Settings, nonceKey: [UInt8], previousNonceKey: [UInt8]? = nil, now: Instant = Instant(milliseconds: 0)) -> DPoPOptions {
        var policy = ProofPolicy()
        policy.maximumAge = settings.dpopWindow
        if settings.dpopNonce != .off {
            let lifetime = NonceSource(key: nonceKey).lifetime
            let source = NonceSource(key: nonceKey, previousKey: previousNonceKey, previousAcceptedUntil: now + lifetime)
            policy.nonces = settings.dpopNonce == .always ? .always(source) : .whenClockIsOff(source)
        }
        var options = DPoPOptions()
        options.mode = settings.dpop
        options.checker = ProofChecker(policy: policy, replayCache: ReplayCache(capacity: settings.dpopReplayCache, share: settings.dpopReplayShare,
                                                                                window: policy.replayWindow))
        options.publicURL = settings.publicURL
        return options
    }

    /// The start-up warning when proofs' `htu` origin comes from the client's `Host` header:
    /// device binding is on and neither `--public-url` nor a gateway (`--trusted-proxy`, whose
    /// `X-Forwarded-Proto`/`X-Forwarded-Host` name it) is configured. Then a proof made for
    /// another origin with the same path passes here (docs/deploy.md, "The public URL").
    /// nil: nothing to say.
    static func hostOriginWarning(_ settings: Settings) -> String? {
        guard settings.dpop != .off, settings.publicURL == nil, !settings.isTrustedProxyGiven else { return nil }
        return "Warning: DPoP proofs are checked against the origin the request names (its Host, or X-Forwarded-Host from the "
            + "default trusted proxies on loopback), since neither --public-url nor --trusted-proxy is given: expected for a trial "
            + "on this machine; in a deployment set --public-url https://<your host> (BATON_PUBLIC_URL), or --dpop off."
    }

    /// The key of `--dpop-nonce-key-file` when nonces are on, read before the store is opened
    /// (a refused file must not leave a new database behind); nil: derive it from the token key.
    /// - Throws: `StoreError` when the file cannot be read (missing, unsafe mode, not a key).
    static func nonceKey(_ settings: Settings) throws(StoreError) -> [UInt8]? {
        guard settings.dpopNonce != .off, let path = settings.dpopNonceKeyFile else { return nil }
        return try KeyFile.load(at: path, create: false).bytes
    }

    /// The key of `--dpop-previous-nonce-key-file` when nonces are on, read like the nonce key's.
    static func previousNonceKeyFromFile(_ settings: Settings) throws(StoreError) -> [UInt8]? {
        guard settings.dpopNonce != .off, let path = settings.dpopPreviousNonceKeyFile else { return nil }
        return try KeyFile.load(at: path, create: false).bytes
    }
}
