@testable import BatonStore
import Foundation
import Glibc
import Testing

/// The database on a tmpfs of a few MiB that the test fills: writes answer 503 `unavailable`,
/// verify keeps answering, /readyz says not ready, nothing is corrupted, and service resumes
/// by itself once space returns.
@Suite(.serialized)
struct FullDiskTests {
    @Test(.enabled(if: SmallFilesystem.unavailableReason == nil, Comment(rawValue: SmallFilesystem.unavailableReason ?? "")))
    func aFullDiskRefusesWritesKeepsVerifyingAndRecoversByItself() throws {
        let volume = try SmallFilesystem(megabytes: 8)
        let server = try ServerProcess(directory: volume.path + "/baton")
        try server.addUser("alice")
        var heads: [Int64: Acknowledged] = [:]
        var tokens: [Int64: String] = [:]
        for device in 0..<3 {
            let bundle = try server.login(device: "phone-\(device)")
            let chain = try #require(chainDatabaseID(bundle["chain_id"] as! String))
            heads[chain] = Acknowledged(generation: 0, token: bundle["token"] as! String)
            tokens[chain] = bundle["token"] as? String
        }
        let filled = volume.fill()
        #expect(volume.freeBytes < 64 * 1024, "free after filling: \(volume.freeBytes)")

        // Exchange round-robin until the disk refuses (the WAL must grow past its file).
        var refusal: HTTPConnection.Response?
        var acknowledgedWhileFilling = 0
        for attempt in 0..<6000 where refusal == nil {
            let chain = Array(heads.keys).sorted()[attempt % heads.count]
            let response = try server.request("POST", "/v1/exchange", token: heads[chain]!.token)
            switch response.status {
            case 200:
                heads[chain] = Acknowledged(generation: response.json["generation"] as! Int, token: response.json["token"] as! String)
                acknowledgedWhileFilling += 1
            case 503: refusal = response
            default: Issue.record("exchange answered \(response.status) \(response.text)"); return
            }
        }
        let refused = try #require(refusal, "6000 exchanges on a full disk all succeeded (filler: \(filled) bytes)")
        #expect(refused.error == "unavailable" && refused.headers["content-type"] == "application/json")
        #expect(refused.headers["retry-after"] == "1")

        // While full: verify answers from the readers, readiness says no, writes keep refusing.
        for (_, ack) in heads {
            let verified = try server.request("GET", "/v1/verify", token: ack.token)
            #expect(verified.status == 200, "\(verified.text)")
        }
        let stale = try server.request("GET", "/v1/verify", token: tokens.values.first!)
        #expect(stale.error == "token_superseded" || stale.status == 200)  // generation 0 is superseded unless never exchanged
        let ready = try server.request("GET", "/readyz")
        #expect(ready.status == 503 && ready.error == "unavailable")
        let login = try server.request("POST", "/v1/login", json: #"{"username":"alice","password":"correct horse battery","device_id":"phone-9"}"#)
        #expect(login.status == 503 && login.error == "unavailable")
        let again = try server.request("POST", "/v1/exchange", token: heads.values.first!.token)
        #expect(again.status == 503 && again.error == "unavailable")

        // Space returns: readiness and writes come back without a restart, and a token whose
        // exchange was refused exchanges normally (the refusal left no trace).
        try FileManager.default.removeItem(atPath: volume.path + "/filler")
        #expect(eventually(within: 15) { (try? server.request("GET", "/readyz").status) == 200 })
        // The verifies during the outage marked their heads presented (R3a) once space returned.
        let database = try Connection(path: server.databasePath)
        #expect(eventually(within: 10) {
            (try? database.statement("SELECT count(*) FROM chains WHERE head_presented = 1").first { $0.int(0) }) == Int64(heads.count)
        })
        database.close()
        for chain in heads.keys.sorted() {
            let response = try server.request("POST", "/v1/exchange", token: heads[chain]!.token)
            #expect(response.status == 200, "\(response.text)")
            if response.status == 200 {
                heads[chain] = Acknowledged(generation: response.json["generation"] as! Int, token: response.json["token"] as! String)
            }
        }
        #expect(try server.login(device: "phone-10")["token"] != nil)

        #expect(server.stop() == 0)
        let check = try LineageCheck(databasePath: server.databasePath, acknowledged: heads)
        #expect(check.problems == [])
        #expect(check.lost == 0 && check.aheadByOne == 0)
        print("full disk: filler \(filled) bytes; \(acknowledgedWhileFilling) exchanges acknowledged before the first refusal; " +
              "\(check.chainsChecked) chains checked, lost \(check.lost)")
    }
}
