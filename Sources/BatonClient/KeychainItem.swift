import Foundation

/// One generic password item in the Keychain (service, account, access group): the reads and
/// writes the credential store and the device key share, over a `KeychainBackend`.
struct KeychainItem: Sendable {
    let key: KeychainItemKey
    let backend: any KeychainBackend

    /// The item's data; nil when there is no item.
    /// - Throws: `.credentialsUnavailable` for a status a later try can overcome (a locked
    ///   device, a Keychain not available yet at launch: `KeychainStatus.transient`), `.store`
    ///   for any other Keychain failure.
    func read() throws(BatonClientError) -> Data? {
        let (status, data, _) = backend.read(key)
        if status == KeychainStatus.itemNotFound { return nil }
        try check(status, "read")
        return data
    }

    /// Adds the item with `data`; with `replacing`, an existing item is updated instead.
    /// - Returns: false when the item exists and `replacing` is false (someone added it first).
    /// - Throws: as `read()`.
    func add(_ data: Data, replacing: Bool) throws(BatonClientError) -> Bool {
        if replacing {
            // Update first: without an access group an add goes to the default group and would
            // make a second copy of an item that lives in another of the app's groups, while an
            // update changes the item wherever it is. Added only when there is none.
            var status = backend.update(key, data: data)
            if status == KeychainStatus.itemNotFound {
                status = backend.add(key, data: data)
                if status == KeychainStatus.duplicateItem { status = backend.update(key, data: data) }  // added meanwhile
            }
            try check(status, "write")
            return true
        }
        let status = backend.add(key, data: data)
        if status == KeychainStatus.duplicateItem { return false }
        try check(status, "write")
        return true
    }

    /// Deletes the item; a missing item is no failure.
    /// - Throws: as `read()`.
    func delete() throws(BatonClientError) {
        let status = backend.delete(key)
        if status == KeychainStatus.itemNotFound { return }
        try check(status, "delete")
    }

    /// Throws for a failed Keychain call; -34018 that has lasted is a configuration error (F13).
    func check(_ status: Int32, _ operation: String) throws(BatonClientError) {
        guard status == KeychainStatus.missingEntitlement else {
            backend.missingEntitlement.reset()
            return try Self.check(status, operation)
        }
        if backend.missingEntitlement.isMisconfigured() { throw .store(MissingEntitlementWatch.message(operation)) }
        throw .credentialsUnavailable("the Keychain cannot be read now (OSStatus \(status))")
    }

    /// Throws for a failed Keychain call (every transient status "unavailable").
    static func check(_ status: Int32, _ operation: String) throws(BatonClientError) {
        if KeychainStatus.transient.contains(status) {
            throw .credentialsUnavailable("the Keychain cannot be read now (OSStatus \(status))")
        }
        guard status == KeychainStatus.success else { throw .store("Keychain \(operation) failed (OSStatus \(status))") }
    }
}
