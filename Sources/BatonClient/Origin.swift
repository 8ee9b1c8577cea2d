import Foundation

/// A URL's origin (RFC 6454): scheme, host and port, the port made explicit for http and https.
/// The session's token goes only to the base URL's origin.
struct Origin: Sendable, Equatable {
    let scheme: String
    let host: String
    let port: Int

    /// The origin of `url`; nil without a scheme or host (a relative URL).
    init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        self.scheme = scheme
        self.host = host
        switch (url.port, scheme) {
        case (let port?, _): self.port = port
        case (nil, "https"): self.port = 443
        case (nil, "http"): self.port = 80
        default: self.port = -1
        }
    }

    /// Whether `url` has this origin.
    func contains(_ url: URL?) -> Bool { url.flatMap(Origin.init) == self }
}
