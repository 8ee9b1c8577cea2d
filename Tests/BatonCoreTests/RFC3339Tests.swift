@testable import BatonCore
import Testing

struct RFC3339Tests {
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00Z"),
        (Int64(951_782_400_000), "2000-02-29T00:00:00Z"),
        (Int64(1_795_320_900_000), "2026-11-22T04:15:00Z"),
        (Int64(-1000), "1969-12-31T23:59:59Z"),
    ])
    func formatsUTC(_ milliseconds: Int64, _ text: String) {
        #expect(RFC3339.format(Instant(milliseconds: milliseconds)) == text)
        #expect(RFC3339.parse(text) == Instant(milliseconds: milliseconds))
    }

    @Test func parsesOffsetsAndFractions() {
        #expect(RFC3339.parse("2026-11-22T05:15:00+01:00") == RFC3339.parse("2026-11-22T04:15:00Z"))
        #expect(RFC3339.parse("2026-11-22T04:15:00.25Z")?.milliseconds == RFC3339.parse("2026-11-22T04:15:00Z")!.milliseconds + 250)
        #expect(RFC3339.parse("2026-13-22T04:15:00Z") == nil)
        #expect(RFC3339.parse("yesterday") == nil)
        #expect(RFC3339.parse("2026-11-22T04:15:00") == nil)
    }

    @Test func roundTripsEveryDayForFiftyYears() {
        var instant = Instant(milliseconds: 0)
        for _ in 0..<(50 * 366) {
            #expect(RFC3339.parse(RFC3339.format(instant)) == instant)
            instant = instant + .seconds(86_400 + 1)
        }
    }
}
