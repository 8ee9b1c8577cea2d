import BatonCore

/// A remembered chain row as the bytes of one `SharedHeadTable` slot, and back (pure).
///
/// Layout (little-endian words, then bytes): epoch, readAt, userID, createdAt, generation,
/// issuedAt, expiresAt, authTime, confirmFailures; one word of small fields (device class,
/// presented, revocation, user disabled, has a key, and the three strings' lengths); the
/// 32-byte head hash; then the username, the device id and the key thumbprint. A row whose
/// strings do not fit (`maximumBytes`) is not encoded: it is read from the database every time.
package enum HeadSlotCodec {
    /// Bytes a slot's payload holds.
    package static let maximumBytes = 232
    private static let hashOffset = 80
    private static let stringsOffset = 112
    private static let deviceClasses = DeviceClass.allCases
    private static let reasons = RevocationReason.allCases

    /// Writes `entry` into `buffer` (at least `maximumBytes`); its length, or nil when it does not fit.
    package static func encode(_ entry: SharedHeadTable.Entry, into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        let head = entry.record.head
        let username = entry.record.username.utf8, device = head.deviceID.utf8, key = (head.jkt ?? "").utf8
        let length = stringsOffset + username.count + device.count + key.count
        guard head.hash.count == 32, length <= maximumBytes, buffer.count >= maximumBytes,
              username.count <= 255, device.count <= 255, key.count <= 255,
              let deviceClass = deviceClasses.firstIndex(of: head.deviceClass) else { return nil }
        let reason = head.revocation.map { reasons.firstIndex(of: $0)! + 1 } ?? 0
        var offset = 0
        func put(_ word: UInt64) {
            buffer.storeBytes(of: word.littleEndian, toByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        func put<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
            for byte in bytes { buffer[offset] = byte; offset += 1 }
        }
        put(entry.epoch)
        put(entry.readAt)
        put(UInt64(bitPattern: head.userID))
        put(UInt64(bitPattern: head.createdAt.milliseconds))
        put(UInt64(bitPattern: Int64(head.generation)))
        put(UInt64(bitPattern: head.issuedAt.milliseconds))
        put(UInt64(bitPattern: head.expiresAt.milliseconds))
        put(UInt64(bitPattern: head.authTime.milliseconds))
        put(UInt64(bitPattern: Int64(head.confirmFailures)))
        func put(byte: UInt8) { put(CollectionOfOne(byte)) }
        put(byte: UInt8(deviceClass))
        put(byte: head.presented ? 1 : 0)
        put(byte: UInt8(reason))
        put(byte: head.isUserDisabled ? 1 : 0)
        put(byte: head.jkt == nil ? 0 : 1)
        put(byte: UInt8(username.count))
        put(byte: UInt8(device.count))
        put(byte: UInt8(key.count))
        put(head.hash)
        put(username)
        put(device)
        put(key)
        return length
    }

    /// The entry `length` bytes of `buffer` hold, for `chain`; nil when they are not one
    /// `encode` wrote (a wrong length or an unknown value).
    package static func decode(_ buffer: UnsafeRawBufferPointer, length: Int, chain: ChainID) -> SharedHeadTable.Entry? {
        guard length >= stringsOffset, length <= maximumBytes, buffer.count >= length else { return nil }
        func word(_ index: Int) -> UInt64 { UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self)) }
        func signed(_ index: Int) -> Int64 { Int64(bitPattern: word(index)) }
        let deviceClass = Int(buffer[72]), presented = buffer[73], reason = Int(buffer[74]), disabled = buffer[75], bound = buffer[76]
        let usernameCount = Int(buffer[77]), deviceCount = Int(buffer[78]), keyCount = Int(buffer[79])
        guard deviceClass < deviceClasses.count, presented <= 1, reason <= reasons.count, disabled <= 1, bound <= 1,
              bound == 1 || keyCount == 0, stringsOffset + usernameCount + deviceCount + keyCount == length else { return nil }
        func string(at offset: Int, count: Int) -> String {
            String(decoding: UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + count)]), as: UTF8.self)
        }
        let head = ChainHead(
            id: chain, userID: signed(2), deviceID: string(at: stringsOffset + usernameCount, count: deviceCount),
            deviceClass: deviceClasses[deviceClass], createdAt: Instant(milliseconds: signed(3)), generation: Int(signed(4)),
            hash: Array(buffer[hashOffset..<stringsOffset]), issuedAt: Instant(milliseconds: signed(5)),
            expiresAt: Instant(milliseconds: signed(6)), presented: presented == 1,
            revocation: reason == 0 ? nil : reasons[reason - 1], authTime: Instant(milliseconds: signed(7)),
            confirmFailures: Int(signed(8)), isUserDisabled: disabled == 1,
            jkt: bound == 1 ? string(at: stringsOffset + usernameCount + deviceCount, count: keyCount) : nil)
        return SharedHeadTable.Entry(record: ChainRecord(head: head, username: string(at: stringsOffset, count: usernameCount)),
                                     epoch: word(0), readAt: word(1))
    }
}
