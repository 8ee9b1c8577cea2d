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
        var lines = left.count < indent ? [] : [left]
        var line = left.count < indent ? left + String(repeating: " ", count: indent - left.count) : margin
        for word in right.split(separator: " ") {
            if line.count > indent, line.count + 1 + word.count > width {
                lines.append(line)
                line = margin
            }
            line += (line.count > indent ? " " : "") + word
        }
        return (lines + [line]).joined(separator: "\n")
    }

    /// Each line of `text` wrapped at word boundaries to 80 columns; continuation lines start
    /// with `continuation` (e.g. seven spaces under `USAGE: `). Leading spaces are kept.
    static func wrap(_ text: String, continuation: String = "") -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { source -> String in
            guard source.count > width else { return String(source) }
            let leading = String(repeating: " ", count: source.prefix { $0 == " " }.count)
            var lines: [String] = []
            var line = leading
            for word in source.dropFirst(leading.count).split(separator: " ") {
                let start = lines.isEmpty ? leading : continuation
                if line.count > start.count, line.count + 1 + word.count > width {
                    lines.append(line)
                    line = continuation
                }
                line += (line.count > (lines.isEmpty ? leading : continuation).count ? " " : "") + word
            }
            return (lines + [line]).joined(separator: "\n")
        }.joined(separator: "\n")
    }
}
