import BatonCore

/// An identity provider as the database keeps it (`identity_issuers`): its settings are a JSON
/// object that BatonIdentity's `IdentityIssuer` reads and writes; the store only keeps it.
package struct IdentityIssuerRecord: Equatable, Sendable {
    package var name: String
    package var issuer: String
    package var settings: String
    package var createdAt: Instant

    package init(name: String, issuer: String, settings: String, createdAt: Instant) {
        self.name = name
        self.issuer = issuer
        self.settings = settings
        self.createdAt = createdAt
    }
}

/// An identity (`iss`, `sub`) linked to an account (`identity_links`).
package struct IdentityLink: Equatable, Sendable {
    package var issuer: String
    package var subject: String
    package var userID: Int64
    package var username: String
    package var createdAt: Instant

    package init(issuer: String, subject: String, userID: Int64, username: String, createdAt: Instant) {
        self.issuer = issuer
        self.subject = subject
        self.userID = userID
        self.username = username
        self.createdAt = createdAt
    }
}

/// A login through an identity provider, after its subject token passed every check
/// (BatonIdentity's `SubjectTokenCheck`): what the store needs to mark the token used, find or
/// make the account, and create the device-bound chain.
package struct IdentityLoginRequest: Sendable {
    /// The issuer's configured name (the prefix of a created account's username) and exact `iss`.
    package var issuerName: String
    package var issuer: String
    package var subject: String
    /// Whether an identity no account is linked to gets a new account (else it is refused).
    package var createsUsers: Bool
    /// When the user last authenticated at the provider (the chain's `auth_time`); nil when the
    /// token does not say: the chain then counts as not recently authenticated.
    package var authTime: Instant?
    /// Digests that mark the subject token used, kept until `keepUntil`.
    package var replayDigests: [[UInt8]]
    package var keepUntil: Instant
    package var deviceID: String
    package var deviceClass: DeviceClass
    package var deviceName: String?
    /// The DPoP key's thumbprint: the chain is bound to it.
    package var proofKey: String

    package init(issuerName: String, issuer: String, subject: String, createsUsers: Bool, authTime: Instant?, replayDigests: [[UInt8]],
                 keepUntil: Instant, deviceID: String, deviceClass: DeviceClass, deviceName: String?, proofKey: String) {
        self.issuerName = issuerName
        self.issuer = issuer
        self.subject = subject
        self.createsUsers = createsUsers
        self.authTime = authTime
        self.replayDigests = replayDigests
        self.keepUntil = keepUntil
        self.deviceID = deviceID
        self.deviceClass = deviceClass
        self.deviceName = deviceName
        self.proofKey = proofKey
    }

    /// The username an account created for this identity gets: the issuer's name, `-`, and 16
    /// hex digits of SHA-256(`iss` NUL `sub`). Derived, never taken from a claim such as
    /// `email` or `preferred_username` (which another identity may also claim), and within
    /// the username rules.
    package var createdUsername: String {
        let digest = Digest.sha256(Array((issuer + "\u{0}" + subject).utf8))
        return issuerName + "-" + digest.prefix(8).map { byte in
            let hex = Array("0123456789abcdef")
            return String([hex[Int(byte >> 4)], hex[Int(byte & 15)]])
        }.joined()
    }
}

/// An identity provider's fresh ID token, checked (BatonIdentity's `SubjectTokenCheck`), offered
/// as a step-up at `/v1/confirm` instead of a password (docs/identity.md, "Step-up").
package struct IdentityConfirmation: Sendable {
    package var issuer: String
    package var subject: String
    /// When the user authenticated at the provider: the chain's new `auth_time`.
    package var authTime: Instant
    package var replayDigests: [[UInt8]]
    package var keepUntil: Instant

    package init(issuer: String, subject: String, authTime: Instant, replayDigests: [[UInt8]], keepUntil: Instant) {
        self.issuer = issuer
        self.subject = subject
        self.authTime = authTime
        self.replayDigests = replayDigests
        self.keepUntil = keepUntil
    }
}
