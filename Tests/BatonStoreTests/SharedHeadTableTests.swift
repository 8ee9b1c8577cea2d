import BatonCore
import BatonOperations
import CSystem
import Foundation
import Synchronization
import Testing

/// `SharedHeadTable` and its slot codec alone: what a slot keeps, and that threads reading
/// and filling the same slots never see a row mixed from two writes (the sequence lock).
struct SharedHeadTableTests {
    /// A row whose every field is derived from `value`, with strings of varying lengths, so a
    /// row mixed from two writes is seen as such (`isWhole`).
    /// `sameLength`: strings of one length for every value, so that a mixed copy decodes.
    static func row(_ value: Int, chain: ChainID, bound: Bool = true, sameLength: Bool = false) -> SharedHeadTable.Entry {
        let device = sameLength ? "device-" + String(1_000_000 + value).dropFirst() : String(repeating: "d", count: value % 20) + "\(value)"
        let username = sameLength ? "user-" + String(1_000_000 + value).dropFirst() : "user-\(value)" + String(repeating: "u", count: value % 30)
        let head = ChainHead(
            id: chain, userID: Int64(value), deviceID: device,
            deviceClass: DeviceClass.allCases[value % DeviceClass.allCases.count], createdAt: Instant(milliseconds: Int64(value) * 3),
            generation: value, hash: [UInt8](repeating: UInt8(truncatingIfNeeded: value), count: 32),
            issuedAt: Instant(milliseconds: Int64(value) * 5), expiresAt: Instant(milliseconds: Int64(value) * 7),
            presented: value % 2 == 0, revocation: value % 3 == 0 ? nil : RevocationReason.allCases[value % RevocationReason.allCases.count],
            authTime: Instant(milliseconds: Int64(value) * 11), confirmFailures: value % 5, isUserDisabled: value % 7 == 0,
            jkt: bound ? String(repeating: "k", count: 43) : nil)
        return SharedHeadTable.Entry(record: ChainRecord(head: head, username: username),
                                     epoch: UInt64(value) * 13, readAt: UInt64(value) * 17)
    }

    static func isWhole(_ entry: SharedHeadTable.Entry, chain: ChainID) -> Bool {
        let value = entry.record.head.generation
        let expected = row(value, chain: chain, bound: true, sameLength: true)
        return entry.record.head == expected.record.head && entry.record.username == expected.record.username
            && entry.epoch == expected.epoch && entry.readAt == expected.readAt
    }

    @Test func aRowComesBackAsItWentIn() throws {
        let table = try #require(SharedHeadTable(rows: 64))
        for value in 0..<200 {
            let chain = ChainID(rawValue: Int64(value) &* 7_919 &+ 1)
            let entry = Self.row(value, chain: chain, bound: value % 2 == 1)
            table.remember(entry, for: chain)
            let back = try #require(table.entry(for: chain))
            #expect(back.record.head == entry.record.head && back.record.username == entry.record.username)
            #expect(back.epoch == entry.epoch && back.readAt == entry.readAt)
        }
        #expect(table.count <= table.capacity)
    }

    @Test func aRowWhoseStringsDoNotFitIsNotRemembered() throws {
        let table = try #require(SharedHeadTable(rows: 4))
        let chain = ChainID(rawValue: 42)
        var entry = Self.row(1, chain: chain)
        entry.record.username = String(repeating: "x", count: 200)
        table.remember(entry, for: chain)
        #expect(table.entry(for: chain) == nil)
        entry.record.username = "x"
        table.remember(entry, for: chain)
        #expect(table.entry(for: chain)?.record.username == "x")
        table.forget(chain)
        #expect(table.entry(for: chain) == nil)
    }

    /// A bucket of four, eight chains verified round-robin, every row read at the same epoch:
    /// a chain must not always give up the same way, or each way would alternate between two
    /// chains and nothing would ever be found (a direct-mapped cache). The first version did
    /// that: its victim came from the chain id and the epoch only (and an operator-precedence
    /// slip), and this test found 0 rows in 800 lookups against it.
    @Test func aRoundRobinOverMoreChainsThanABucketHoldsFindsSome() throws {
        let table = try #require(SharedHeadTable(rows: 4))
        let chains = (1...8).map { ChainID(rawValue: Int64($0)) }
        var found = 0
        for _ in 0..<100 {
            for (index, chain) in chains.enumerated() {
                if table.entry(for: chain) != nil { found += 1 } else { table.remember(Self.row(index, chain: chain), for: chain) }
            }
        }
        #expect(found > 40, "\(found) of 800 lookups found their row")
    }

    @Test func noTableForNoRows() {
        #expect(SharedHeadTable(rows: 0) == nil)
        #expect(SharedHeadTable(rows: 5)?.capacity == 8)
    }

    /// Any bytes handed to the decoder give a row or nil, never a crash (the table only ever
    /// hands it what the encoder wrote, but a torn copy is rejected before it gets there).
    @Test func theDecoderRejectsWhatTheEncoderDidNotWrite() {
        var generator = SystemRandomNumberGenerator()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: HeadSlotCodec.maximumBytes, alignment: 8)
        defer { buffer.deallocate() }
        for _ in 0..<5_000 {
            for index in 0..<buffer.count { buffer[index] = UInt8.random(in: 0...255, using: &generator) }
            buffer[72] = UInt8.random(in: 0...4, using: &generator)
            for index in 73...76 { buffer[index] = UInt8.random(in: 0...1, using: &generator) }
            for index in 77...79 { buffer[index] = UInt8.random(in: 0...60, using: &generator) }
            let length = Int.random(in: 100...HeadSlotCodec.maximumBytes, using: &generator)
            if let entry = HeadSlotCodec.decode(UnsafeRawBufferPointer(buffer), length: length, chain: ChainID(rawValue: 1)) {
                #expect(entry.record.head.hash.count == 32)
            }
        }
    }

    /// The sequence lock itself, at full speed: two threads write two whole payloads (all
    /// words A, all words B) into one slot while two read it; every copy read is all A or all
    /// B. Against a build whose reader skipped its second sequence check (2026-11-27), it
    /// failed in both of 2 runs (a mixed copy within the 2 s); `threadsFillingAndReading...Row`
    /// below passed that build in 4 runs: through the codec, a write is too short a part of
    /// each thread's time for copies to overlap it often.
    @Test func threadsFillingAndReadingOneSlotNeverSeeAMixedPayload() throws {
        let words = Int(BATON_SLOT_PAYLOAD_WORDS), length = UInt64(8 * words)
        let bucket = UnsafeMutablePointer<baton_slot>.allocate(capacity: Int(BATON_SLOT_WAYS))
        bucket.initialize(repeating: baton_slot(), count: Int(BATON_SLOT_WAYS))
        defer { bucket.deallocate() }
        let address = UInt(bitPattern: bucket)
        let stop = Atomic<Bool>(false), running = Atomic<Int>(4)
        let mixed = Atomic<Int>(0), seen = Atomic<Int>(0)
        func start(_ body: @escaping @Sendable (UnsafeMutablePointer<baton_slot>) -> Void) {
            Thread { body(UnsafeMutablePointer(bitPattern: address)!); running.subtract(1, ordering: .relaxed) }.start()
        }
        for pattern in [UInt64(0xAAAA_AAAA_AAAA_AAAA), 0x5555_5555_5555_5555] {
            start { bucket in
                let payload = [UInt64](repeating: pattern, count: words)
                while !stop.load(ordering: .relaxed) { _ = baton_bucket_write(bucket, 7, payload, length, 0) }
            }
        }
        for _ in 0..<2 {
            start { bucket in
                var copy = [UInt64](repeating: 0, count: words)
                while !stop.load(ordering: .relaxed) {
                    guard baton_bucket_read(bucket, 7, &copy) == length else { continue }
                    seen.add(1, ordering: .relaxed)
                    if copy.contains(where: { $0 != copy[0] }) { mixed.add(1, ordering: .relaxed) }
                }
            }
        }
        let deadline = ContinuousClock.now + .seconds(2)
        while ContinuousClock.now < deadline, mixed.load(ordering: .relaxed) == 0 { usleep(10_000) }
        stop.store(true, ordering: .relaxed)
        while running.load(ordering: .relaxed) > 0 { usleep(1_000) }
        #expect(seen.load(ordering: .relaxed) > 1_000)
        #expect(mixed.load(ordering: .relaxed) == 0, "\(mixed.load(ordering: .relaxed)) of \(seen.load(ordering: .relaxed)) copies were mixed")
    }

    /// Through the codec: two threads fill one slot with rows while two read it, and every
    /// row read is whole. The rows all have one length, so a mixed copy would decode and be
    /// caught here (the sequence lock's own test is the one above).
    @Test func threadsFillingAndReadingTheSameSlotsNeverSeeAMixedRow() throws {
        let table = try #require(SharedHeadTable(rows: 4))
        let chains = [ChainID(rawValue: 1)]
        let stop = Atomic<Bool>(false)
        let mixed = Atomic<Int>(0), seen = Atomic<Int>(0)
        let running = Atomic<Int>(4)
        // Threads of their own: a dispatch queue would run the spinning writers first, one per core.
        func start(_ body: @escaping @Sendable () -> Void) { Thread { body(); running.subtract(1, ordering: .relaxed) }.start() }
        for writer in 0..<2 {
            start {
                var value = writer
                while !stop.load(ordering: .relaxed) {
                    let chain = chains[value % chains.count]
                    table.remember(Self.row(value % 100_000, chain: chain, sameLength: true), for: chain)
                    value += 2
                }
            }
        }
        for _ in 0..<2 {
            start {
                while !stop.load(ordering: .relaxed) {
                    for chain in chains {
                        guard let entry = table.entry(for: chain) else { continue }
                        seen.add(1, ordering: .relaxed)
                        if !Self.isWhole(entry, chain: chain) { mixed.add(1, ordering: .relaxed) }
                    }
                }
            }
        }
        let deadline = ContinuousClock.now + .seconds(2)
        while ContinuousClock.now < deadline, seen.load(ordering: .relaxed) < 200_000, mixed.load(ordering: .relaxed) == 0 {
            usleep(10_000)
        }
        stop.store(true, ordering: .relaxed)
        while running.load(ordering: .relaxed) > 0 { usleep(1_000) }
        #expect(seen.load(ordering: .relaxed) > 1_000)
        #expect(mixed.load(ordering: .relaxed) == 0, "\(mixed.load(ordering: .relaxed)) of \(seen.load(ordering: .relaxed)) rows read were mixed")
    }
}
