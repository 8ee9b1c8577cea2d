@testable import BatonCLI
import Testing

/// `baton serve` warns at start when `--public-url` names a domain reserved for examples (the
/// package's `/etc/default/baton` ships `https://auth.example.com`): every DPoP login would
/// then fail `htu_mismatch`.
struct PublicURLWarningTests {
    @Test(arguments: ["https://auth.example.com", "https://example.com", "https://AUTH.EXAMPLE.ORG:8443", "https://a.b.example.net",
                      "https://auth.example.com.", "http://baton.test", "https://login.example", "https://x.invalid"])
    func aReservedExampleDomainIsWarnedAbout(url: String) throws {
        var settings = ServeCommand.Settings()
        let origin: String = try #require(ServeCommand.publicOrigin(url))
        settings.publicURL = origin
        let warning = try #require(ServeCommand.exampleDomainWarning(settings))
        #expect(warning.contains("BATON_PUBLIC_URL") && warning.contains("htu_mismatch"))
    }

    @Test(arguments: ["https://auth.bank.cn", "https://example.com.cn", "https://myexample.com", "https://examples.org",
                      "http://127.0.0.1:8080", "http://[::1]:8080", "https://testing.dev", "http://localhost:8080"])
    func anyOtherHostIsNot(url: String) throws {
        var settings = ServeCommand.Settings()
        let origin: String = try #require(ServeCommand.publicOrigin(url))
        settings.publicURL = origin
        #expect(ServeCommand.exampleDomainWarning(settings) == nil)
    }

    @Test func noPublicURLNoWarning() {
        #expect(ServeCommand.exampleDomainWarning(ServeCommand.Settings()) == nil)
    }
}
