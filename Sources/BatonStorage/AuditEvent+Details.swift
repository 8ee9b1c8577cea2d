import BatonCore

/// The detail objects of the events both stores write the same way.
extension AuditEvent {
    /// Both sides of a reuse (R3): the original exchange and this attempt. An original exchange
    /// sent without X-Device-Id is shown with the chain's device (the one the chain is bound
    /// to), and `device_id_from` says which it is: `x-device-id` or `chain`.
    package static func reuseDetail(original: ExchangeRecord?, attempt: RequestContext, at now: Instant, generation: Int, chainDevice: String) -> [String: JSONValue] {
        let first: JSONValue = original.map {
            .object(["at": .string($0.at.rfc3339Milliseconds), "ip": .optional($0.ip), "user_agent": .optional($0.userAgent),
                     "device_id": .string($0.deviceID ?? chainDevice),
                     "device_id_from": .string($0.deviceID == nil ? "chain" : "x-device-id")])
        } ?? .null
        return [
            "reused_generation": .int(Int64(generation)),
            "original": first,
            "attempt": .object(["at": .string(now.rfc3339Milliseconds), "ip": .optional(attempt.ip),
                                "user_agent": .optional(attempt.userAgent), "device_id": .optional(attempt.deviceID)]),
        ]
    }
}

extension AuditEvent {
    /// The `chain_revoked` event both stores write: the reason, the operator's `note` if any,
    /// `scope: all` for `revoke --all` (which SecurityEvents does not count as evidence), and
    /// `by_chain`, the user's own session that signed this one out.
    package static func chainRevoked(
        _ chain: ChainHead, username: String?, reason: RevocationReason, note: String? = nil, isBulk: Bool = false,
        actingChain: ChainID? = nil, context: RequestContext
    ) -> AuditEvent {
        var detail: [String: JSONValue] = ["reason": .string(reason.rawValue)]
        if let note { detail["note"] = .string(note) }
        if let actingChain { detail["by_chain"] = .string(actingChain.description) }
        if isBulk { detail["scope"] = .string("all") }
        return AuditEvent(kind: .chainRevoked, userID: chain.userID, username: username, chainID: chain.id,
                          generation: chain.generation, context: context, detail: detail)
    }
}
