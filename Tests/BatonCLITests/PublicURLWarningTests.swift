@testable import BatonCLI
import Testing

/// `baton serve` warns at start when `--public-url` names a domain reserved for examples (the
/// package's `/etc/default/baton` ships `https://auth.example.com`): every DPoP login would
/// then fail `htu_mismatch`.
struct PublicURLWarningTests {
    @Test(arguments: [
        ("https://auth.example.com", true), ("https://example.com", true), ("https://AUTH.EXAMPLE.ORG:8443", true),
        ("https://a.b.example.net", true), ("https://auth.example.com.", true), ("http://baton.test", true),
        ("https://login.example", true), ("https://x.invalid", true),
        ("https://auth.bank.cn", false), ("https://example.com.cn", false), ("https://myexample.com", false),
        ("https://examples.org", false), ("http://127.0.0.1:8080", false), ("http://[::1]:8080", false),
        ("https://testing.dev", false), ("http://localhost:8080", false),
    ])
    func aReservedExampleDomainIsWarnedAboutAndNoOtherHost(url: String, reserved: Bool) throws {
        var settings = ServeCommand.Settings()
        let origin: String = try #require(ServeCommand.publicOrigin(url))
        settings.publicURL = origin
        let warning = ServeCommand.exampleDomainWarning(settings)
        #expect((warning != nil) == reserved)
        if let warning { #expect(warning.contains("BATON_PUBLIC_URL") && warning.contains("htu_mismatch")) }
    }

    @Test func noPublicURLNoWarning() {
        #expect(ServeCommand.exampleDomainWarning(ServeCommand.Settings()) == nil)
    }
}
