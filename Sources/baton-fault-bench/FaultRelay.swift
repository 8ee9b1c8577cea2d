import Foundation
import Glibc

/// A fault-injecting TCP relay on a loopback port of its own in front of the server, for one
/// simulated device: what passes and what is lost is its `DeviceLink`'s decision.
final class FaultRelay: @unchecked Sendable {
    let port: UInt16
    let link: DeviceLink
    private let listener: Int32
    private let upstreamPort: UInt16

    enum RelayError: Error { case cannotListen }

    init(to upstreamPort: UInt16, link: DeviceLink) throws {
        guard let (listener, port) = Sockets.listen() else { throw RelayError.cannotListen }
        self.listener = listener
        self.port = port
        self.upstreamPort = upstreamPort
        self.link = link
        Thread { [self] in acceptLoop() }.start()
    }

    /// Stops accepting (connections in flight end when their peers close).
    func stop() { shutdown(listener, Int32(SHUT_RDWR)) }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 && errno == EINTR { continue }
            guard client >= 0 else { return }
            let connection = RelayConnection(client: client, upstreamPort: upstreamPort, link: link)
            Thread { connection.run() }.start()
        }
    }
}
