import BatonAPI
import Foundation

/// One `--introspection-client ID:SECRET-FILE` before its secret is read.
struct IntrospectionClientSetting: Equatable {
    var id: String
    var secretFile: String

    /// `ID:PATH`: an id of 1-64 letters, digits, `.`, `_` or `-` (it travels form-urlencoded in
    /// HTTP Basic, and the audit names it), then the secret file's path; nil otherwise.
    init?(_ text: String) {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let id = text[..<colon]
        let path = text[text.index(after: colon)...]
        guard (1...64).contains(id.utf8.count), !path.isEmpty,
              id.utf8.allSatisfy({ byte in
                  (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                      || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
              }) else { return nil }
        self.id = String(id)
        self.secretFile = String(path)
    }
}

/// Why an introspection client's secret file could not be used.
enum ClientSecretError: Error, Equatable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case readableByOthers(path: String)
    case malformed(path: String)

    var description: String {
        switch self {
        case .unreadable(let path, let reason):
            "cannot read introspection client secret file \(path): \(reason). Under the packaged unit (a dynamic user), hand it over as a credential: LoadCredential=NAME:\(path) in a drop-in and the client as ID:%d/NAME (docs/deploy.md, \"OAuth introspection\")"
        case .readableByOthers(let path): "introspection client secret file \(path) can be read by group or others; chmod 600 it"
        case .malformed(let path): "introspection client secret file \(path) must hold one line of 32 to 512 printable ASCII characters without spaces (e.g. openssl rand -hex 32)"
        }
    }
}

extension IntrospectionClientSetting {
    /// The client with its secret read from `secretFile`, which group and others must not be
    /// able to read (like the token key and webhook secret files). The secret is the file's
    /// text without surrounding white space.
    func load() throws(ClientSecretError) -> IntrospectionClient {
        let attributes: [FileAttributeKey: Any]
        let text: String
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: secretFile)
            text = try String(contentsOfFile: secretFile, encoding: .utf8)
        } catch {
            throw .unreadable(path: secretFile, reason: (error as NSError).localizedDescription)
        }
        if let mode = attributes[.posixPermissions] as? Int, mode & 0o077 != 0 { throw .readableByOthers(path: secretFile) }
        let secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (32...512).contains(secret.utf8.count), secret.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else {
            throw .malformed(path: secretFile)
        }
        return IntrospectionClient(id: id, secret: Array(secret.utf8))
    }
}

extension ServeCommand {
    /// Each `--introspection-client` with its secret read, before the store is opened (a
    /// refused secret file must not leave a new database behind).
    /// - Throws: a message naming the secret file that could not be used.
    static func introspectionClients(_ settings: Settings) throws(StoreOpenFailure) -> [IntrospectionClient] {
        var clients: [IntrospectionClient] = []
        for setting in settings.introspectionClients {
            do throws(ClientSecretError) {
                clients.append(try setting.load())
            } catch {
                throw StoreOpenFailure(message: error.description)
            }
        }
        return clients
    }
}
