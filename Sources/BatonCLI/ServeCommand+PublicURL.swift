extension ServeCommand {
    /// The start-up warning when `--public-url` names a domain reserved for examples and tests
    /// (RFC 2606, RFC 6761: `example.com`, `example.net`, `example.org` and their subdomains,
    /// and the `.example`, `.test` and `.invalid` top-level domains), such as the package's
    /// `/etc/default/baton` as shipped (`https://auth.example.com`). No phone reaches such a
    /// host, and each DPoP proof names the host the app called, so every device-bound request
    /// would be refused `htu_mismatch`. A warning, not a refusal: a trial on one machine may
    /// use such a name on purpose (docs/deploy.md's self-signed certificate). nil: nothing to say.
    static func exampleDomainWarning(_ settings: Settings) -> String? {
        guard let origin = settings.publicURL, let host = Self.host(ofOrigin: origin), Self.isReservedExampleDomain(host) else { return nil }
        return "Warning: --public-url (BATON_PUBLIC_URL) is \(origin), a domain reserved for examples: DPoP proofs name the "
            + "host your apps call, so every device-bound request will be refused (htu_mismatch) unless that is really this "
            + "host's name. Set BATON_PUBLIC_URL in /etc/default/baton to https://<your host> (docs/deploy.md, step 2)."
    }

    /// The host of an origin `scheme://host[:port]`, lowercased, without a trailing dot; nil if none.
    static func host(ofOrigin origin: String) -> String? {
        guard let start = origin.firstRange(of: "://")?.upperBound else { return nil }
        var authority = origin[start...]
        if authority.hasPrefix("[") { return nil }  // an IPv6 literal: no domain
        if let colon = authority.lastIndex(of: ":") { authority = authority[..<colon] }
        let host = authority.lowercased()
        return host.hasSuffix(".") ? String(host.dropLast()) : host
    }

    /// Whether `host` is (under) a name RFC 2606 and RFC 6761 reserve for documentation and tests.
    static func isReservedExampleDomain(_ host: String) -> Bool {
        for domain in ["example.com", "example.net", "example.org"] where host == domain || host.hasSuffix("." + domain) { return true }
        for topLevel in ["example", "test", "invalid"] where host == topLevel || host.hasSuffix("." + topLevel) { return true }
        return false
    }
}
