import Glibc

/// A failed system call: which one and its errno.
package struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    package var call: String
    package var errno: Int32

    package var description: String { "\(call): \(String(cString: strerror(errno)))" }
}

/// Runs a system call, retrying on EINTR; a -1 result throws `SystemError`.
@discardableResult
package func syscall<T: BinaryInteger>(_ name: String, _ body: () -> T) throws(SystemError) -> T {
    while true {
        let result = body()
        if result != -1 { return result }
        if errno == EINTR { continue }
        throw SystemError(call: name, errno: errno)
    }
}
