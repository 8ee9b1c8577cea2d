@_spi(Simulation) import BatonClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The thief: at one moment it copies what the device stores (the token and device id; with
/// `thiefHasKey`, the device key too), and at a later moment presents the copy: an exchange
/// (the damaging use) or a verify. A successor it gets it uses again later. Its requests go
/// straight to the server (its own network is not the device's).
extension SimWorld {
    func scheduleThief(stealAt moment: Duration) {
        SimClock.schedule(after: moment) { [self] in
            guard !isWindingDown, let stored = store.contents, let bundle = stored.bundle else {
                log("thief finds no token")
                return
            }
            let key = mix.thiefHasKey ? store.deviceKey : nil
            let known = observed.tokens[bundle.token]
            log("thief copies \(known.map { "\($0.chain)#\($0.generation)" } ?? "a token")\(key == nil ? "" : " and the device key")")
            observed.thiefChain = bundle.chainID
            let useAfter = random.duration(.zero, .seconds(1200))
            let exchanges = random.chance(0.7)
            SimClock.schedule(after: useAfter) { [self] in
                present(bundle.token, type: bundle.tokenType, deviceID: stored.deviceID, key: key, exchange: exchanges)
            }
        }
    }

    private func present(_ token: String, type: TokenBundle.TokenType, deviceID: String, key: DeviceKey?, exchange: Bool) {
        guard !isWindingDown else { return }
        let url = URL(string: SimServer.publicURL + (exchange ? "/v1/exchange" : "/v1/verify"))!
        var nonce: String?
        var response = send(token, type: type, deviceID: deviceID, key: key, url: url, exchange: exchange, nonce: nil)
        if response.status == 401, let fresh = response.headers.first(where: { $0.name.lowercased() == "dpop-nonce" })?.value, nonce == nil {
            nonce = fresh
            response = send(token, type: type, deviceID: deviceID, key: key, url: url, exchange: exchange, nonce: fresh)
        }
        guard exchange, response.status == 200,
              let body = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any],
              let successor = body["token"] as? String else { return }
        observed.thiefSuccessor = successor
        // The thief uses what it got, later.
        SimClock.schedule(after: random.duration(.seconds(1), .seconds(600))) { [self] in
            present(successor, type: type, deviceID: deviceID, key: key, exchange: random.chance(0.5))
        }
    }

    private func send(_ token: String, type: TokenBundle.TokenType, deviceID: String, key: DeviceKey?, url: URL,
                      exchange: Bool, nonce: String?) -> HTTPResponseLite {
        var request = URLRequest(url: url)
        request.httpMethod = exchange ? "POST" : "GET"
        request.setValue(deviceID, forHTTPHeaderField: "X-Device-Id")
        let bound = type == .dpop
        request.setValue((bound ? "DPoP " : "Bearer ") + token, forHTTPHeaderField: "Authorization")
        if bound, let key, let proof = try? DeviceProof.make(key: key, method: request.httpMethod!, url: url, token: token, nonce: nonce,
                                                              now: serverDate(), randomBytes: { [self] in randomBytes($0) }) {
            request.setValue(proof, forHTTPHeaderField: "DPoP")
        }
        let response = deliver(request, from: .thief, label: "thief")
        return HTTPResponseLite(status: response.status, headers: response.headers, body: response.body)
    }

    private func serverDate() -> Date {
        Date(timeIntervalSince1970: Double(SimWallClock().now().milliseconds) / 1000)
    }
}

/// The parts of an answer the thief reads.
struct HTTPResponseLite {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]
}
