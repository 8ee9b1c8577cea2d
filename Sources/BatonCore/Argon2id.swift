import CArgon2
import Glibc

/// argon2id (libargon2) with its working memory mapped for each call and unmapped after it.
///
/// libargon2 otherwise `malloc`s its m KiB (19 MiB by default) per hash. glibc serves blocks
/// that large from `mmap` only until the first one is freed, then raises its mmap threshold
/// and keeps later ones in its arenas after `free`: 256 logins left ~120 MiB resident. With
/// `allocate_cbk`/`free_cbk` backed by `mmap`/`munmap`, the memory goes back to the system
/// when each hash ends (libargon2 first wipes it, `FLAG_clear_internal_memory`).
package enum Argon2id {
    /// The `length`-byte argon2id tag of `password` and `salt` at the given cost.
    /// - Returns: nil when libargon2 refuses the input (parameters out of range, no memory).
    package static func derive(_ password: String, salt: [UInt8], memoryKiB: UInt32, iterations: UInt32, parallelism: UInt32, length: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: length)
        var passwordBytes = Array(password.utf8)
        var saltBytes = salt
        let status = out.withUnsafeMutableBufferPointer { outBuffer in
            passwordBytes.withUnsafeMutableBufferPointer { passwordBuffer in
                saltBytes.withUnsafeMutableBufferPointer { saltBuffer in
                    var context = argon2_context()
                    context.out = outBuffer.baseAddress
                    context.outlen = UInt32(length)
                    context.pwd = passwordBuffer.baseAddress
                    context.pwdlen = UInt32(passwordBuffer.count)
                    context.salt = saltBuffer.baseAddress
                    context.saltlen = UInt32(saltBuffer.count)
                    context.t_cost = iterations
                    context.m_cost = memoryKiB
                    context.lanes = parallelism
                    context.threads = parallelism
                    context.version = UInt32(ARGON2_VERSION_13.rawValue)
                    context.allocate_cbk = { memory, bytes in
                        let mapped = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                        guard let mapped, mapped != UnsafeMutableRawPointer(bitPattern: -1) else {
                            return ARGON2_MEMORY_ALLOCATION_ERROR.rawValue
                        }
                        memory?.pointee = mapped.assumingMemoryBound(to: UInt8.self)
                        return ARGON2_OK.rawValue
                    }
                    context.free_cbk = { memory, bytes in
                        if let memory { munmap(memory, bytes) }
                    }
                    context.flags = 0  // ARGON2_DEFAULT_FLAGS
                    return argon2_ctx(&context, Argon2_id)
                }
            }
        }
        // The password's copy is not needed any more.
        passwordBytes.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } }
        return status == ARGON2_OK.rawValue ? out : nil
    }
}
