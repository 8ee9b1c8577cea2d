import BatonPostgres
import Testing

/// What `baton serve` makes of a PostgreSQL cluster's durability settings (`PostgresDurability`).
struct PostgresDurabilitySettingsTests {
    static func settings(fsync: String = "on", fullPageWrites: String = "on", configured: String = "on", session: String = "on",
                         standbys: String = "") -> PostgresDurability {
        PostgresDurability(fsync: fsync, fullPageWrites: fullPageWrites, configuredSynchronousCommit: configured,
                           sessionSynchronousCommit: session, synchronousStandbyNames: standbys)
    }

    @Test func aDurableClusterIsTakenSilently() {
        for configured in ["on", "remote_apply"] {
            let durable = Self.settings(configured: configured, session: configured, standbys: "standby")
            #expect(durable.refusal == nil && durable.notes.isEmpty)
        }
    }

    @Test func fsyncOrFullPageWritesOffIsRefusedNamingThem() throws {
        let refusal = try #require(Self.settings(fsync: "off", fullPageWrites: "off").refusal)
        #expect(refusal.hasPrefix("PostgreSQL runs with fsync = off and full_page_writes = off: a power cut can lose or tear commits it acknowledged"))
        #expect(refusal.contains("Set them to on") && refusal.contains("--unsafe-postgres-durability"))
        #expect(Self.settings(fullPageWrites: "off").refusal?.contains("Set it to on") == true)
    }

    @Test func aRaisedSynchronousCommitIsNoted() {
        #expect(Self.settings(configured: "local", session: "on", standbys: "standby").notes
                == ["Note: PostgreSQL's synchronous_commit is local; Baton's connections use on, so that every commit it acknowledges was flushed and reached the synchronous standby."])
    }
}
