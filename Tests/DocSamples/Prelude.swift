// What docs/client.md's samples take from the app around them: its screens, its prompts, the
// values it already has. scripts/check-client-ios type-checks each sample for iOS against
// BatonClient's public interface with these declarations beside it, so that a sample that
// drifts from the API fails the test suite.
import BatonClient
import Foundation

let session = BatonSession(
    configuration: BatonConfiguration(baseURL: URL(string: "https://api.example.com")!),
    store: MemoryCredentialStore())
let batonSession = session
let configuration = BatonConfiguration(baseURL: URL(string: "https://api.example.com")!)
let store: any CredentialStore = MemoryCredentialStore()
let myPinnedSession = URLSession(configuration: .ephemeral)
let name = "alice"
let password = "correct horse battery"
let transferRequest = URLRequest(url: URL(string: "/api/transfer")!)
let deviceName = "iPhone, added 6 Dec 2026"
/// The app's identity-provider SDK (docs/client.md, "Logging in through the bank's identity provider").
let freshIDToken = "eyJhbGciOiJSUzI1NiJ9.e30.c2ln"
enum IdentityProvider {
    static func freshIDToken(nonce: String, maxAge: Int?) async throws -> String? { nil }
}

@MainActor func showHome() {}
@MainActor func showLogin(message: String?) {}
@MainActor func showPlaceholder() {}
func message(for reason: LoginRequiredReason) -> String { reason.defaultMessage }
func askForPassword() async throws -> String { password }
func askPassword() async -> String? { password }
enum PasswordPrompt {
    static func ask(reason: String) async -> String? { password }
}
