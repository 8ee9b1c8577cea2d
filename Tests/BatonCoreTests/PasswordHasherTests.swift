@testable import BatonCore
import CArgon2
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
        #expect(throws: BatonError.invalidArgument("Password must be at least 8 bytes (UTF-8).")) { try hasher.hash("short") }
    }
}

/// The PHC strings Baton writes are libargon2's, both ways, and parsing is strict.
struct Argon2HashTests {
    @Test func ownHashesVerifyWithLibargon2() throws {
        let encoded = try PasswordHasher(concurrency: 1).hash("correct horse")
        #expect(argon2id_verify(encoded, "correct horse", 13) == ARGON2_OK.rawValue)
        #expect(argon2id_verify(encoded, "correct horsf", 13) == ARGON2_VERIFY_MISMATCH.rawValue)
    }

    @Test func libargon2HashesVerifyHere() throws {
        let salt = [UInt8](repeating: 7, count: 16)
        var encoded = [CChar](repeating: 0, count: 128)
        let status = argon2id_hash_encoded(2, 19 * 1024, 1, "correct horse", 13, salt, salt.count, 32, &encoded, encoded.count)
        try #require(status == ARGON2_OK.rawValue)
        let text = String(decoding: encoded.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #expect(Argon2Hash(parsing: text)?.text == text)
        let hasher = PasswordHasher(concurrency: 1)
        #expect(try hasher.verify("correct horse", against: text))
        #expect(try !hasher.verify("correct horsf", against: text))
    }

    @Test func roundTrips() {
        let hash = Argon2Hash(memoryKiB: 19456, iterations: 2, parallelism: 1, salt: Array(0..<16), hash: Array(100..<132))
        #expect(hash.text == "$argon2id$v=19$m=19456,t=2,p=1$AAECAwQFBgcICQoLDA0ODw$ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM")
        #expect(Argon2Hash(parsing: hash.text) == hash)
    }

    @Test(arguments: [
        "",
        "$argon2i$v=19$m=19456,t=2,p=1$AAECAwQFBgcICQoLDA0ODw$ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM",  // argon2i
        "$argon2id$v=16$m=19456,t=2,p=1$AAECAwQFBgcICQoLDA0ODw$ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM",  // version 1.0
        "$argon2id$v=19$m=19456,t=2$AAECAwQFBgcICQoLDA0ODw$ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM",  // no p
        "$argon2id$v=19$m=19456,t=2,p=1,p=1$AAECAwQFBgcICQoLDA0ODw$ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM",  // p twice
        "$argon2id$v=19$m=-1,t=2,p=1$AAECAwQFBgcICQoLDA0ODw$ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM",  // sign
        "$argon2id$v=19$m=19456,t=2,p=1$AAECAwQFBgcICQoLDA0ODw$ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1-f4CBgoM",  // base64url
        "$argon2id$v=19$m=19456,t=2,p=1$AAECAwQFBgcICQoLDA0ODw==$ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM",  // padding
        "$argon2id$v=19$m=19456,t=2,p=1$$ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM",  // no salt
        "$argon2id$v=19$m=19456,t=2,p=1$AAECAwQFBgcICQoLDA0ODw$ZGVm$",  // extra field
    ])
    func refusesMalformed(_ text: String) {
        #expect(Argon2Hash(parsing: text) == nil)
    }

    @Test func unparsableStoredHashMatchesNothing() throws {
        #expect(try !PasswordHasher(concurrency: 1).verify("correct horse", against: "$argon2id$garbage"))
    }
}
