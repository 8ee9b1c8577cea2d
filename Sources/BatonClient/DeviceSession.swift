import Foundation

/// One of the user's sessions, as a "your devices" screen shows it (`BatonSession.sessions()`).
public struct DeviceSession: Sendable, Hashable, Identifiable {
    /// The session's chain id: what `signOut(sessionID:password:)` takes.
    public var id: String
    /// The device id the session logged in with.
    public var deviceID: String
    public var deviceClass: DeviceClass
    /// The name the device gave at login (`login(deviceName:)`), if any.
    public var deviceName: String?
    public var createdAt: Date
    /// The last login, token exchange or password confirmation (not every request).
    public var lastUsedAt: Date
    /// The client address and User-Agent of that last use, as the server saw them.
    public var lastIPAddress: String?
    public var lastUserAgent: String?
    /// Whether this is this app's own session.
    public var isCurrent: Bool
    /// Whether the session is bound to its device's key (DPoP): a copy of its token alone is
    /// refused. False for servers that do not say.
    public var isBound: Bool

    /// A session from one element of `GET /v1/sessions`; nil when a required member is missing.
    init?(json: [String: Any]) {
        let dates = ISO8601DateFormatter()
        guard let id = json["chain_id"] as? String, let deviceID = json["device_id"] as? String,
              let deviceClass = (json["device_class"] as? String).flatMap(DeviceClass.init(rawValue:)),
              let created = (json["created_at"] as? String).flatMap(dates.date(from:)),
              let lastUsed = (json["last_used_at"] as? String).flatMap(dates.date(from:)),
              let isCurrent = json["current"] as? Bool
        else { return nil }
        self.id = id
        self.deviceID = deviceID
        self.deviceClass = deviceClass
        self.deviceName = json["device_name"] as? String
        self.createdAt = created
        self.lastUsedAt = lastUsed
        self.lastIPAddress = json["last_ip"] as? String
        self.lastUserAgent = json["last_user_agent"] as? String
        self.isCurrent = isCurrent
        self.isBound = json["bound"] as? Bool ?? false
    }
}
