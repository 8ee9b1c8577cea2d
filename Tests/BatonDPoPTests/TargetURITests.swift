@testable import BatonDPoP
import Testing

/// `htu` normalization (RFC 9449 §4.3 with RFC 3986 §6.2.2 and §6.2.3).
struct TargetURITests {
    @Test(arguments: [
        ("https://baton.example/v1/verify", "https://baton.example/v1/verify"),
        ("HTTPS://Baton.EXAMPLE/v1/verify", "https://baton.example/v1/verify"),
        ("https://baton.example:443/v1/verify", "https://baton.example/v1/verify"),
        ("https://baton.example:/v1/verify", "https://baton.example/v1/verify"),
        ("http://baton.example:80/", "http://baton.example/"),
        ("http://baton.example:443/", "http://baton.example:443/"),
        ("https://baton.example:08443/x", "https://baton.example:8443/x"),
        ("https://baton.example", "https://baton.example/"),
        ("https://baton.example/v1/verify?token=x#top", "https://baton.example/v1/verify"),
        ("https://baton.example?x", "https://baton.example/"),
        ("https://baton.example/%7euser/%2fa%3F", "https://baton.example/~user/%2Fa%3F"),
        ("https://baton.example/a/./b/../c/", "https://baton.example/a/c/"),
        ("https://baton.example/a/%2E%2E/b", "https://baton.example/b"),
        ("https://baton.example/../../a", "https://baton.example/a"),
        ("https://baton.example/a/..", "https://baton.example/"),
        ("https://baton.example/a//b", "https://baton.example/a//b"),
        ("https://[2001:DB8::1]:8443/v1", "https://[2001:db8::1]:8443/v1"),
        ("https://[::1]/v1", "https://[::1]/v1"),
        ("https://127.0.0.1:443/v1", "https://127.0.0.1/v1"),
        // Found by the fuzzer: a decoded escape in the host is lowered too (normalizing twice
        // gave "h%2Fq" from "h%2FQ"), and the remaining escape keeps its upper-case digits.
        ("http://h%2f%51", "http://h%2Fq/"),
    ])
    func normalizes(_ uri: String, _ normalized: String) throws {
        let once = try #require(TargetURI(uri))
        #expect(once.text == normalized)
        #expect(TargetURI(once.text) == once, "normalizing is idempotent")
    }

    @Test(arguments: [
        "", "/v1/verify", "baton.example/v1", "ftp://baton.example/", "https:/baton.example/", "https://",
        "https://user:pass@baton.example/", "https://baton.example:99999/", "https://baton.example:12a/",
        "https://baton.example/a b", "https://baton.example/%zz", "https://baton.example/%4", "https://bäton.example/",
        "https://[::1/", "https://[::1]x/", "https://:443/",
    ])
    func refuses(_ uri: String) {
        #expect(TargetURI(uri) == nil)
    }
}
