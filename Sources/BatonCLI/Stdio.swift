import Glibc

/// Writes `text` to file descriptor 2, retrying on EINTR and short writes.
func writeStandardError(_ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno == EINTR { continue }
            return
        }
        bytes = bytes.dropFirst(written)
    }
}
