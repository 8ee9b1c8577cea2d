/// The two-column layout of help texts (options, arguments, subcommands), wrapped to fit an
/// 80-column terminal: names on the left, descriptions from column 32, continuation lines
/// indented to column 32. Pure.
enum HelpLayout {
    static let width = 80
    static let indent = 32

    /// `left` padded to column 32 followed by `right` wrapped at word boundaries; a `left` too
    /// long for the column gets a line of its own.
    static func row(_ left: String, _ right: String) -> String {
        let margin = String(repeating: " ", count: indent)
        var lines: [String] = []
        var current = left.count < indent ? left + String(repeating: " ", count: indent - left.count) : nil
        if current == nil { lines.append(left) }
        var line = current ?? margin
        var lineHasWords = false
        for word in right.split(separator: " ") {
            if lineHasWords, line.count + 1 + word.count > width {
                lines.append(line)
                line = margin
                lineHasWords = false
            }
            line += (lineHasWords ? " " : "") + word
            lineHasWords = true
        }
        current = line
        lines.append(current!)
        return lines.joined(separator: "\n")
    }

    /// Each line of `text` wrapped at word boundaries to 80 columns; continuation lines start
    /// with `continuation` (e.g. seven spaces under `USAGE: `).
    static func wrap(_ text: String, continuation: String = "") -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { source in
            var lines: [String] = []
            var line = ""
            for word in source.split(separator: " ", omittingEmptySubsequences: false) {
                if !line.isEmpty, line.count + 1 + word.count > width, line != continuation {
                    lines.append(line)
                    line = continuation + word
                } else {
                    line += (line.isEmpty && lines.isEmpty ? "" : (line == continuation ? "" : " ")) + word
                }
            }
            lines.append(line)
            return lines.joined(separator: "\n")
        }.joined(separator: "\n")
    }
}
