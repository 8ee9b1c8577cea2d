import BatonCore
import BatonStorage

/// The security event log: one JSON line on standard output for each committed revocation
/// (with its reason) and each detected reuse, fork or refused proof of a bound chain, beside
/// the access log. The lines come from the audit events the store committed, so a line is
/// never written for a change that was rolled back. Never a token, password or hash: the
/// audit events hold none.
enum SecurityLog {
    /// The kinds that get a line: every revocation, and the evidence kinds of an incident.
    static let kinds: Set<AuditKind> = Set([.chainRevoked] + SecurityEvents.kinds)

    /// `{"event":"security","kind","time","chain_id","user_id","generation","ip","device_id",…}`
    /// with the event's detail (`reason` for a revocation) merged in; nil for other kinds.
    static func line(for event: AuditEvent, at now: Instant) -> String? {
        guard kinds.contains(event.kind) else { return nil }
        var fields = event.detail
        fields["event"] = .string("security")
        fields["kind"] = .string(event.kind.rawValue)
        fields["time"] = .string(now.rfc3339)
        if let chainID = event.chainID { fields["chain_id"] = .string(chainID.description) }
        if let userID = event.userID { fields["user_id"] = .int(userID) }
        if let generation = event.generation { fields["generation"] = .int(Int64(generation)) }
        if let ip = event.context.ip { fields["ip"] = .string(ip) }
        if let deviceID = event.context.deviceID { fields["device_id"] = .string(deviceID) }
        return JSONValue.object(fields).text
    }
}
