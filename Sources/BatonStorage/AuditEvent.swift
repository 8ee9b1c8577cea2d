import BatonCore

/// One audit event as written: who, what, where, and a detail object.
package struct AuditEvent: Sendable, Equatable {
    package var kind: AuditKind
    package var userID: Int64?
    package var username: String?
    package var chainID: ChainID?
    package var generation: Int?
    package var context: RequestContext
    package var detail: [String: JSONValue]

    package init(
        kind: AuditKind, userID: Int64? = nil, username: String? = nil, chainID: ChainID? = nil,
        generation: Int? = nil, context: RequestContext = RequestContext(), detail: [String: JSONValue] = [:]
    ) {
        self.kind = kind
        self.userID = userID
        self.username = username
        self.chainID = chainID
        self.generation = generation
        self.context = context
        self.detail = detail
    }
}
