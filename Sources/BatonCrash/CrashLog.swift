import CCrashVFS

/// What the recording VFS saw (`CCrashVFS`): the writes, truncates, syncs, creates and
/// deletes of the files under the recorded directory, in order, with the harness's
/// acknowledgement marks among them.
package struct CrashLog: Sendable {
    /// One logged operation on the file numbered `file` (an index into `files`).
    package enum Operation: Sendable, Equatable {
        case write(file: Int, offset: Int, bytes: Range<Int>)
        case truncate(file: Int, size: Int)
        case sync(file: Int)
        case create(file: Int)
        case delete(file: Int)
        /// An acknowledgement: the operation numbered so returned success to its caller here.
        case mark(Int)

        var file: Int? {
            switch self {
            case .write(let file, _, _), .truncate(let file, _), .sync(let file), .create(let file), .delete(let file): file
            case .mark: nil
            }
        }
    }

    package var operations: [Operation]
    /// The bytes of every write, which `Operation.write` ranges index.
    package var data: [UInt8]
    /// The files' names, relative to the recorded directory.
    package var files: [String]

    package init(operations: [Operation], data: [UInt8], files: [String]) {
        self.operations = operations
        self.data = data
        self.files = files
    }

    /// Copies the recording VFS's log (after `CrashRecorder.stop()`).
    static func copyRecorded() -> CrashLog {
        let count = Int(crash_vfs_op_count())
        var operations: [Operation] = []
        operations.reserveCapacity(count)
        var dataEnd = 0
        for index in 0..<count {
            let op = crash_vfs_op_at(Int64(index))
            let file = Int(op.file)
            switch Int32(op.kind) {
            case Int32(CRASH_VFS_WRITE.rawValue):
                operations.append(.write(file: file, offset: Int(op.offset), bytes: Int(op.data)..<Int(op.data + op.length)))
                dataEnd = max(dataEnd, Int(op.data + op.length))
            case Int32(CRASH_VFS_TRUNCATE.rawValue): operations.append(.truncate(file: file, size: Int(op.offset)))
            case Int32(CRASH_VFS_SYNC.rawValue): operations.append(.sync(file: file))
            case Int32(CRASH_VFS_CREATE.rawValue): operations.append(.create(file: file))
            case Int32(CRASH_VFS_DELETE.rawValue): operations.append(.delete(file: file))
            default: operations.append(.mark(Int(op.offset)))
            }
        }
        let data = dataEnd == 0 ? [] : Array(UnsafeBufferPointer(start: crash_vfs_data(), count: dataEnd))
        let files = (0..<crash_vfs_file_count()).map { String(cString: crash_vfs_file_name($0)) }
        return CrashLog(operations: operations, data: data, files: files)
    }
}

/// The recording VFS, made SQLite's default for the whole process.
package enum CrashRecorder {
    /// Registers it (once per process); false if SQLite has no "unix" VFS to wrap.
    package static func install() -> Bool { crash_vfs_register() == 0 }
    /// Logs the files under `directory` from now on, in a new log.
    package static func start(directory: String) { crash_vfs_start(directory) }
    /// Marks an acknowledgement in the log.
    package static func mark(_ number: Int) { crash_vfs_mark(Int64(number)) }
    /// Stops logging and returns the log.
    package static func stop() -> CrashLog {
        crash_vfs_stop()
        return CrashLog.copyRecorded()
    }
}
