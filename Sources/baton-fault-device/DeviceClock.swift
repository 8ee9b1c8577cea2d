import Foundation

/// The device's wall clock as the client reads it: the real time plus an offset (a phone set
/// hours off), which can jump once by `jump` seconds `jumpAfter` seconds into the run (the
/// user or the network fixing the time while the app runs), plus the offset in `file` when
/// one is given: the benchmark moves it for every process of the device at once (clock-jump).
struct DeviceClock: Sendable {
    let offset: TimeInterval
    let jumpAfter: TimeInterval?
    let jump: TimeInterval
    let file: String?
    let start = Date()

    /// What the device believes the time is.
    func now() -> Date {
        let real = Date()
        var shift = offset
        if let jumpAfter, real.timeIntervalSince(start) >= jumpAfter { shift += jump }
        if let file, let data = FileManager.default.contents(atPath: file),
           let moved = TimeInterval(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) {
            shift += moved
        }
        return real.addingTimeInterval(shift)
    }
}
