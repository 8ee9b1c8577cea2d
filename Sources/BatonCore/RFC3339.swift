/// Formats and parses RFC 3339 timestamps (`2026-11-22T04:15:00Z`) without Foundation,
/// using the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`).
package enum RFC3339 {
    /// `instant` in UTC, second precision, `Z` suffix.
    package static func format(_ instant: Instant) -> String {
        let (year, month, day, secondOfDay) = fields(instant)
        guard (0...9999).contains(year) else {
            return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(secondOfDay / 3600, 2) + ":"
                + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2) + "Z"
        }
        // The common case, written into 20 bytes at once (this runs on every verify).
        return String(unsafeUninitializedCapacity: 20) { buffer in
            writeCommon(year, month, day, secondOfDay, into: UnsafeMutableRawBufferPointer(buffer))
            return 20
        }
    }

    /// Appends `format(instant)`'s bytes to `bytes` (a response body), with no `String` between.
    package static func append(_ instant: Instant, to bytes: inout [UInt8]) {
        let (year, month, day, secondOfDay) = fields(instant)
        guard (0...9999).contains(year) else { return bytes.append(contentsOf: format(instant).utf8) }
        withUnsafeTemporaryAllocation(byteCount: 20, alignment: 1) { buffer in
            writeCommon(year, month, day, secondOfDay, into: buffer)
            bytes.append(contentsOf: buffer)
        }
    }

    /// The calendar date and the second of the day of `instant` (UTC).
    private static func fields(_ instant: Instant) -> (year: Int64, month: Int64, day: Int64, secondOfDay: Int64) {
        let totalSeconds = instant.milliseconds >= 0
            ? instant.milliseconds / 1000 : (instant.milliseconds - 999) / 1000
        let days = totalSeconds >= 0 ? totalSeconds / 86_400 : (totalSeconds - 86_399) / 86_400
        let (year, month, day) = civil(fromDays: days)
        return (year, month, day, totalSeconds - days * 86_400)
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` into the first 20 bytes of `buffer`, for a year of 4 digits.
    private static func writeCommon(_ year: Int64, _ month: Int64, _ day: Int64, _ secondOfDay: Int64,
                                    into buffer: UnsafeMutableRawBufferPointer) {
        func put(_ value: Int64, _ width: Int, at offset: Int) {
            var value = value
            for index in stride(from: offset + width - 1, through: offset, by: -1) {
                buffer[index] = UInt8(48 + value % 10)
                value /= 10
            }
        }
        put(year, 4, at: 0)
        buffer[4] = 45
        put(month, 2, at: 5)
        buffer[7] = 45
        put(day, 2, at: 8)
        buffer[10] = 84
        put(secondOfDay / 3600, 2, at: 11)
        buffer[13] = 58
        put(secondOfDay / 60 % 60, 2, at: 14)
        buffer[16] = 58
        put(secondOfDay % 60, 2, at: 17)
        buffer[19] = 90
    }

    /// `instant` in UTC with milliseconds, e.g. `2026-11-22T04:15:00.250Z`: for the audit trail,
    /// where two events in one second must still show their order.
    package static func formatMilliseconds(_ instant: Instant) -> String {
        let millisecond = (instant.milliseconds % 1000 + 1000) % 1000
        return String(format(instant).dropLast()) + "." + pad(millisecond, 3) + "Z"
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`; nil when malformed.
    package static func parse(_ text: String) -> Instant? {
        let b = Array(text.utf8)
        func num(_ from: Int, _ count: Int) -> Int64? {
            guard from + count <= b.count else { return nil }
            var value: Int64 = 0
            for byte in b[from..<from + count] {
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int64(byte - 48)
            }
            return value
        }
        guard b.count >= 20, b[4] == 45, b[7] == 45, b[10] == 84 || b[10] == 116 || b[10] == 32,
              b[13] == 58, b[16] == 58,
              let year = num(0, 4), let month = num(5, 2), let day = num(8, 2),
              let hour = num(11, 2), let minute = num(14, 2), let second = num(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var millis: Int64 = 0
        if index < b.count, b[index] == 46 {
            index += 1
            var digits = 0
            while index < b.count, b[index] >= 48, b[index] <= 57 {
                if digits < 3 { millis = millis * 10 + Int64(b[index] - 48) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<3 where digits < 3 { millis *= 10 }
        }
        guard index < b.count else { return nil }
        var offsetSeconds: Int64 = 0
        switch b[index] {
        case 90, 122: // Z z
            guard index + 1 == b.count else { return nil }
        case 43, 45: // + -
            guard index + 6 == b.count, b[index + 3] == 58,
                  let oh = num(index + 1, 2), let om = num(index + 4, 2), oh < 24, om < 60
            else { return nil }
            offsetSeconds = (oh * 3600 + om * 60) * (b[index] == 43 ? 1 : -1)
        default:
            return nil
        }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Instant(milliseconds: seconds * 1000 + millis)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
