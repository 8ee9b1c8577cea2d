@testable import BatonCore
import BatonStorage

/// A store as the tests call it: the protocol's operations with the defaults the concrete
/// stores give (no context, no max_age).
struct StoreHandle: Sendable {
    let base: any LineageStore
    init(_ base: any LineageStore) { self.base = base }

    func login(_ request: LoginRequest, context: RequestContext = RequestContext()) throws(BatonError) -> TokenBundle {
        try base.login(request, context: context)
    }
    func exchange(_ token: String, context: RequestContext = RequestContext()) throws(BatonError) -> TokenBundle {
        try base.exchange(token, context: context)
    }
    func verify(_ token: String, maxAge: Duration? = nil, context: RequestContext = RequestContext()) throws(BatonError) -> Verification {
        try base.verify(token, maxAge: maxAge, context: context)
    }
    func logout(_ token: String, context: RequestContext = RequestContext()) throws(BatonError) {
        try base.logout(token, context: context)
    }
    func confirm(_ token: String, password: String, context: RequestContext = RequestContext()) throws(BatonError) -> Instant {
        try base.confirm(token, password: password, context: context)
    }
    func changePassword(presentedBy token: String, current: String, new newPassword: String,
                        context: RequestContext = RequestContext()) throws(BatonError) -> PasswordChange {
        try base.changePassword(presentedBy: token, current: current, new: newPassword, context: context)
    }
    /// Creates a user as `baton admin user add` does.
    func createUser(_ username: String, password: String) throws(BatonError) {
        _ = try base.createUser(username, password: password, context: .admin)
    }
    func close() { base.close() }
}
