import Glibc

/// Files Baton writes outside SQLite (the key file at first start, `baton admin backup`'s
/// copies), written so that a power cut at any moment leaves the old file or the new one,
/// whole, and never a torn or missing one once the write returned: the bytes go to a
/// temporary file in the same directory, which is fsynced, then takes the final name
/// (`link`, which fails if the name exists, or `rename`, which replaces it), then the
/// directory is fsynced so that the name itself is durable. baton-crash's model checks every
/// crash point of this sequence (`DurableFileCrashTests`).
package enum DurableFile {
    /// Why a durable write failed. Nothing is left at the final name; the temporary file is removed.
    package enum Failure: Error, Equatable, CustomStringConvertible {
        /// `exclusive` and a file already has the name (another process won the race).
        case exists(String)
        case failed(path: String, step: String, errno: Int32)

        package var description: String {
            switch self {
            case .exists(let path): "\(path) already exists"
            case .failed(let path, let step, let code): "cannot \(step) \(path): \(String(cString: strerror(code)))"
            }
        }
    }

    /// The system calls a durable write makes, so that a test can record them instead.
    package protocol Calls {
        /// `open(O_WRONLY|O_CREAT|O_EXCL, mode)`; a descriptor, or -1 and errno.
        func create(_ path: String, mode: mode_t) -> Int32
        func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int
        func fsync(_ fd: Int32) -> Int32
        func close(_ fd: Int32)
        func link(_ from: String, _ to: String) -> Int32
        func rename(_ from: String, _ to: String) -> Int32
        func unlink(_ path: String)
        /// fsync of the directory itself (its entries).
        func syncDirectory(_ path: String) -> Int32
    }

    /// The real calls.
    package struct System: Calls {
        package init() {}
        package func create(_ path: String, mode: mode_t) -> Int32 {
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
            if fd >= 0 { fchmod(fd, mode) }  // exactly this mode, whatever the umask took away
            return fd
        }
        package func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int { Glibc.write(fd, bytes.baseAddress, bytes.count) }
        package func fsync(_ fd: Int32) -> Int32 { Glibc.fsync(fd) }
        package func close(_ fd: Int32) { _ = Glibc.close(fd) }
        package func link(_ from: String, _ to: String) -> Int32 { Glibc.link(from, to) }
        package func rename(_ from: String, _ to: String) -> Int32 { Glibc.rename(from, to) }
        package func unlink(_ path: String) { _ = Glibc.unlink(path) }
        package func syncDirectory(_ path: String) -> Int32 {
            let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else { return -1 }
            defer { _ = Glibc.close(fd) }
            return Glibc.fsync(fd)
        }
    }

    /// The temporary name a write to `path` uses: hidden, in the same directory (a rename or
    /// link never crosses file systems), unique to this process and call.
    package static func temporaryPath(for path: String) -> String {
        let directory = KeyFile.directory(of: path)
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return (directory == "." && !path.hasPrefix("./") ? "" : directory + "/") + ".\(name).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// Writes `bytes` to `path` durably, mode `mode`. `exclusive`: fails with `.exists` if the
    /// name is taken (two processes creating one key agree on the first); otherwise replaces it.
    package static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600, exclusive: Bool,
                              calls: some Calls = System()) throws(Failure) {
        let temporary = temporaryPath(for: path)
        let fd = calls.create(temporary, mode: mode)
        guard fd >= 0 else { throw .failed(path: temporary, step: "create", errno: errno) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { calls.write(fd, UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            guard written > 0 else {
                let code = errno
                calls.close(fd)
                calls.unlink(temporary)
                throw .failed(path: temporary, step: "write", errno: code)
            }
            offset += written
        }
        guard calls.fsync(fd) == 0 else {
            let code = errno
            calls.close(fd)
            calls.unlink(temporary)
            throw .failed(path: temporary, step: "fsync", errno: code)
        }
        calls.close(fd)
        try publish(temporary, as: path, exclusive: exclusive, calls: calls)
    }

    /// Gives the complete, already fsynced file `temporary` the name `path` and makes the name
    /// durable (the second half of `write`, for files another writer made, such as SQLite's backup).
    package static func publish(_ temporary: String, as path: String, exclusive: Bool, calls: some Calls = System()) throws(Failure) {
        if exclusive {
            let linked = calls.link(temporary, path)
            let code = errno
            calls.unlink(temporary)
            guard linked == 0 else { throw code == EEXIST ? .exists(path) : .failed(path: path, step: "link", errno: code) }
        } else {
            guard calls.rename(temporary, path) == 0 else {
                let code = errno
                calls.unlink(temporary)
                throw .failed(path: path, step: "rename", errno: code)
            }
        }
        guard calls.syncDirectory(KeyFile.directory(of: path)) == 0 else {
            throw .failed(path: KeyFile.directory(of: path), step: "fsync the directory of", errno: errno)
        }
    }
}
