import BatonCore
import Foundation

/// A request's JSON object body, with typed field access whose errors name the field.
struct JSONBody {
    private let object: [String: Any]

    /// Parses `bytes` as a JSON object.
    /// - Throws: `.invalidArgument` when it is not valid JSON, not an object, or gives a key
    ///   twice in one object at any depth (naming the key; `JSONDuplicateKeys`).
    init(_ bytes: [UInt8]) throws(BatonError) {
        guard !bytes.isEmpty else { throw .invalidArgument("The request body must be a JSON object.") }
        let parsed: Any
        do { parsed = try JSONSerialization.jsonObject(with: Data(bytes)) } catch {
            throw .invalidArgument("The request body is not valid JSON.")
        }
        guard let object = parsed as? [String: Any] else { throw .invalidArgument("The request body must be a JSON object.") }
        // Foundation keeps the last of two equal keys; Baton answers neither.
        if let key = JSONDuplicateKeys.first(in: bytes) { throw .invalidArgument("The request body has the key '\(key)' twice.") }
        self.object = object
    }

    /// The string field `name`; required unless `optional`.
    func string(_ name: String) throws(BatonError) -> String {
        guard let value = try optionalString(name) else { throw .invalidArgument("\(name) is required.") }
        return value
    }

    func optionalString(_ name: String) throws(BatonError) -> String? {
        guard let value = object[name], !(value is NSNull) else { return nil }
        // JSONSerialization gives NSString for strings; numbers and booleans are NSNumber.
        guard let text = value as? String, !(value is NSNumber) else { throw .invalidArgument("\(name) must be a string.") }
        return text
    }
}
