import Foundation

/// The device's wall clock as the client reads it: the real time plus an offset (a phone set
/// hours off), which can jump once by `jump` seconds `jumpAfter` seconds into the run (the
/// user or the network fixing the time while the app runs).
struct DeviceClock: Sendable {
    let offset: TimeInterval
    let jumpAfter: TimeInterval?
    let jump: TimeInterval
    let start = Date()

    /// What the device believes the time is.
    func now() -> Date {
        let real = Date()
        var shift = offset
        if let jumpAfter, real.timeIntervalSince(start) >= jumpAfter { shift += jump }
        return real.addingTimeInterval(shift)
    }
}
