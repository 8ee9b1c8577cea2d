import Foundation
import Glibc

/// One client connection through the relay, on a thread of its own that owns both sockets
/// (so a reset can close the client's socket at any moment without racing another thread).
/// Requests on one connection are sequential (URLSession does not pipeline); the fate of each
/// is decided by the device's link when its first bytes arrive, and applied to its answer.
struct RelayConnection {
    let client: Int32
    let upstreamPort: UInt16
    let link: DeviceLink

    func run() {
        guard !link.isOffline, let upstream = Sockets.connect(port: upstreamPort) else {
            close(client)
            return
        }
        var clientOpen = true
        defer {
            if clientOpen { close(client) }
            close(upstream)
        }
        var action = RelayAction.pass
        var lastRequest = [UInt8]()
        var stalled = false
        var buffer = [UInt8](repeating: 0, count: 65536)
        var fds = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: upstream, events: Int16(POLLIN), revents: 0)]
        while true {
            fds[0].revents = 0
            fds[1].revents = 0
            let ready = poll(&fds, 2, -1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return }
            if fds[0].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { return }
                let chunk = Array(buffer[..<count])
                let head = String(decoding: chunk.prefix(24), as: UTF8.self)
                if head.hasPrefix("GET /") || head.hasPrefix("POST /") {
                    if link.isOffline { return }
                    action = link.decide(head: head)
                    if head.hasPrefix("POST /v1/exchange") { link.noteExchange(head: String(decoding: chunk, as: UTF8.self)) }
                    lastRequest = chunk
                    switch action {
                    case .dropRequest, .goOffline: return
                    case .duplicateAhead: _ = Sockets.roundTrip(port: upstreamPort, chunk)
                    case .suspend: link.suspendProcesses()
                    default: break
                    }
                } else {
                    lastRequest += chunk  // a body sent after its head
                }
                guard Sockets.sendAll(upstream, chunk[...]) else { return }
            }
            if fds[1].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { recv(upstream, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { return }
                if stalled { continue }  // swallowed until the client gives up
                let answer = action
                action = .pass
                switch answer {
                case .dropAnswer, .suspend(loseAnswer: true): return
                case .offlineAfterAnswer:
                    link.goOffline(for: link.awayPastGrace)
                    return
                case .stallAnswer:
                    stalled = true
                    continue
                case .delayAnswer(let seconds):
                    Thread.sleep(forTimeInterval: seconds)  // the late network, not a synchronisation
                    guard Sockets.sendAll(client, buffer[..<count]) else { return }
                case .resetMidAnswer:
                    Sockets.sendAll(client, buffer[..<(count / 2)])
                    Sockets.reset(client)
                    clientOpen = false
                    return
                default:
                    guard Sockets.sendAll(client, buffer[..<count]) else { return }
                    if answer == .duplicateLate { _ = Sockets.roundTrip(port: upstreamPort, lastRequest) }
                }
            }
        }
    }
}
