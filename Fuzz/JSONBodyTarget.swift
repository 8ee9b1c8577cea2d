// libFuzzer target: the request body decoding of the /v1 API (Sources/BatonAPI/JSONBody.swift
// over Foundation's JSONSerialization, and the duplicate-key scan of JSONDuplicateKeys.swift) and the verify query (VerifyQuery.swift), compiled
// together with them by scripts/fuzz. The input is a login/confirm/password body or, after
// a first byte 0x01, a request-target. Any input must give values or a typed BatonError
// (400 invalid_request), never a trap.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONBody(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if bytes.first == 1 {
        let target = String(decoding: bytes.dropFirst(), as: UTF8.self)
        if let maxAge = try? VerifyQuery.maxAge(in: target) { precondition(maxAge >= .zero, "negative max_age") }
        return 0
    }
    // The duplicate-key scan runs on parsed JSON only; on any bytes it must still not trap.
    _ = JSONDuplicateKeys.first(in: bytes)
    guard let body = try? JSONBody(bytes) else { return 0 }
    for field in ["username", "password", "device_id", "device_class", "device_name", "current_password", "new_password"] {
        do {
            let value = try body.optionalString(field)
            if let value {
                let required = try body.string(field)
                precondition(required == value)
            }
        } catch {
            guard case .invalidArgument = error else { preconditionFailure("unexpected error \(error)") }
        }
    }
    return 0
}
