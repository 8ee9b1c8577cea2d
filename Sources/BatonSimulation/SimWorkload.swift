@_spi(Simulation) import BatonClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the honest user does with each launch: log in when needed (the app; the extension
/// waits for the app's login), then use the app at random moments (each use an API call
/// through `BatonSession.send`), now and then log out and in again.
extension SimWorld {
    func workload(of process: SimProcess) async {
        let session = process.session!
        let stored = store.contents?.bundle != nil
        // Banking apps exchange at launch; not right after a fresh login (calm worlds count
        // exchanges per lifetime).
        let status = await session.restore(exchangeNow: stored && !mix.isCalm && random.chance(0.5))
        // Chain ids are random per run: the log names chains by their order of appearance.
        if case .loggedIn(let chain, let generation) = status {
            log("p\(process.id) restored: logged in, \(name(ofChain: chain))#\(generation)")
        } else {
            log("p\(process.id) restored: \(status)")
        }
        while !isWindingDown && !process.isDead {
            if case .loggedOut = await session.status, process.name == "app" {
                do { try await process.sleep(for: random.duration(.seconds(1), .seconds(30))) } catch { return }
                guard !isWindingDown, !process.isDead else { return }
                if case .loggedOut = await session.status { await logIn(process) }
            }
            // A calm world is a busy user (every token is used to its end: exchanges per lifetime
            // mean something); elsewhere, uses come and go.
            let thinking = mix.isCalm ? random.duration(.seconds(1), .seconds(20)) : random.duration(.seconds(1), .seconds(180))
            do { try await process.sleep(for: thinking) } catch { return }
            guard !isWindingDown, !process.isDead else { return }
            if !mix.isCalm, process.name == "app", random.chance(0.01) {
                observed.userLoggedOutAt = SimClock.now
                log("p\(process.id) user logs out")
                _ = await session.logout()
                continue
            }
            await call(process)
        }
    }

    private func logIn(_ process: SimProcess) async {
        log("p\(process.id) user logs in")
        do {
            try await process.session.login(username: SimServer.username, password: SimServer.password, deviceName: "Sim phone")
        } catch {
            log("p\(process.id) login failed: \(error)")
        }
    }

    /// One API call of the app: it must end (with an answer or an error) within its bound.
    private func call(_ process: SimProcess) async {
        process.callsInFlight += 1
        let started = SimClock.now
        let suspendedBefore = process.suspendedUntil
        var request = URLRequest(url: URL(string: SimServer.publicURL + "/v1/verify")!)
        request.httpMethod = "GET"
        let outcome: String
        do {
            let (_, response) = try await process.session.send(request)
            outcome = "\(response.statusCode)"
        } catch {
            outcome = "\(error)"
        }
        process.callsInFlight -= 1
        let elapsed = SimClock.now.nanoseconds - started.nanoseconds
        log("p\(process.id) call ends after \(Duration.nanoseconds(elapsed)): \(outcome)")
        // A request timeout per replay and the exchange's schedule: 150 s covers them, unless
        // the app was suspended meanwhile (its timers wait) or died.
        if elapsed > 150_000_000_000, !process.isDead, process.suspendedUntil == suspendedBefore {
            violate("p\(process.id) call took \(Duration.nanoseconds(elapsed)) (bound 150 s)")
        }
    }

    /// Forwards a launch's session events to the observer.
    func watchEvents(of process: SimProcess) async {
        for await event in process.session.events {
            observe(event, of: process)
        }
    }
}
