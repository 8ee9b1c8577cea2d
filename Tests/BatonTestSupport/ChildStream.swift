import Foundation

/// What a `ChildProcess`'s standard input, output or error can be connected to: a Foundation
/// `Pipe` (the child gets the end matching the stream's direction, and the parent's copy of
/// that end is closed once the child runs, so the parent's reader sees EOF when the child
/// exits) or a `FileHandle` (the child gets a copy of its descriptor; `FileHandle.nullDevice`
/// stands for /dev/null). The parent keeps and closes its `FileHandle`s itself.
package protocol ChildStream: AnyObject {
    /// The descriptor the child's stream is a copy of, nil for /dev/null; `childReads` is
    /// true for standard input.
    func descriptorForChild(childReads: Bool) -> Int32?

    /// Called once the child runs: closes the parent's copy of a descriptor only the child needs.
    func closeChildEnd(childReads: Bool)
}

extension Pipe: ChildStream {
    /// The read end for the child's standard input, else the write end.
    package func descriptorForChild(childReads: Bool) -> Int32? { childEnd(childReads).fileDescriptor }

    /// Closes the parent's copy of the child's end (through the `FileHandle`, which then never
    /// closes that descriptor number again; a second close is a no-op).
    package func closeChildEnd(childReads: Bool) { try? childEnd(childReads).close() }

    private func childEnd(_ childReads: Bool) -> FileHandle { childReads ? fileHandleForReading : fileHandleForWriting }
}

extension FileHandle: ChildStream {
    /// This handle's descriptor; nil (/dev/null) for `FileHandle.nullDevice`, which has none.
    package func descriptorForChild(childReads: Bool) -> Int32? {
        self === FileHandle.nullDevice ? nil : fileDescriptor
    }

    /// Nothing: the handle is the caller's.
    package func closeChildEnd(childReads: Bool) {}
}
