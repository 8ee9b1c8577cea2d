import BatonCore
import BatonStorage

/// `/v1/sessions/{chain_id}` and the session objects of `GET /v1/sessions`.
enum SessionPath {
    static let prefix = "/v1/sessions/"

    /// The segment after `/v1/sessions/` when there is exactly one, non-empty; nil otherwise.
    static func chainSegment(of path: Substring) -> String? {
        guard path.utf8.count > prefix.utf8.count, path.utf8.starts(with: prefix.utf8) else { return nil }
        let segment = path.dropFirst(prefix.count)
        guard !segment.contains("/") else { return nil }
        return String(segment)
    }

    /// One session as the API shows it.
    static func json(_ session: Session) -> JSONValue {
        .object([
            "chain_id": .string(session.chainID.description), "device_id": .string(session.deviceID),
            "device_class": .string(session.deviceClass.rawValue), "device_name": .optional(session.deviceName),
            "created_at": .string(session.createdAt.rfc3339), "last_used_at": .string(session.lastUsedAt.rfc3339),
            "last_ip": .optional(session.lastAddress), "last_user_agent": .optional(session.lastUserAgent),
            "current": .bool(session.isCurrent), "bound": .bool(session.isBound),
        ])
    }
}
