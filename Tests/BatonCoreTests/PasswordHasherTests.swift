@testable import BatonCore
import Testing

struct PasswordHasherTests {
    let hasher = PasswordHasher(concurrency: 2)

    @Test func hashesWithArgon2idAtOWASPCostAndVerifies() throws {
        let encoded = try hasher.hash("correct horse")
        #expect(encoded.hasPrefix("$argon2id$v=19$m=19456,t=2,p=1$"))
        #expect(try hasher.verify("correct horse", against: encoded))
        #expect(try !hasher.verify("correct horsf", against: encoded))
        #expect(try !hasher.verify("correct horse", against: nil))
    }

    @Test func saltsDiffer() throws {
        #expect(try hasher.hash("password1") != hasher.hash("password1"))
    }

    @Test func refusesShortPasswords() {
        #expect(throws: BatonError.invalidArgument("Password must be at least 8 characters.")) { try hasher.hash("short") }
    }
}
