/// One client connection's state, owned by the event loop that serves it.
final class Connection {
    let fd: Int32
    let peer: IPAddress
    /// Bytes received and not yet parsed.
    var input: [UInt8] = []
    /// Response bytes not yet sent, from `outputOffset` on.
    var output: [UInt8] = []
    var outputOffset = 0
    /// A request is with a worker; later requests wait (responses stay in order).
    var isBusy = false
    /// Close once `output` is sent.
    var closeAfterWrite = false
    /// The request in progress must be complete by then (set at its first byte).
    var requestDeadline: Duration?
    /// An idle connection is closed then.
    var idleDeadline: Duration
    /// A pending write must make progress by then.
    var writeDeadline: Duration?
    /// Lingering close: the answer is sent and writing shut down; what the client still sends
    /// is read and discarded until it closes, this deadline passes, or `lingerBytesLeft` runs out.
    var lingerDeadline: Duration?
    var lingerBytesLeft = 0
    /// The epoll events currently registered.
    var interest: UInt32 = 0
    /// Distinguishes this connection from a later one that reuses the descriptor.
    let serial: UInt64
    var date = HTTPDate()

    init(fd: Int32, peer: IPAddress, serial: UInt64, idleDeadline: Duration) {
        self.fd = fd
        self.peer = peer
        self.serial = serial
        self.idleDeadline = idleDeadline
    }

    var isLingering: Bool { lingerDeadline != nil }

    var hasPendingOutput: Bool { outputOffset < output.count }

    /// Waiting for the next request with nothing buffered or owed.
    var isIdle: Bool { !isBusy && input.isEmpty && !hasPendingOutput }
}
