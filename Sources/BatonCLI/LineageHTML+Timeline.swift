import BatonCore
import BatonStorage

/// The timeline of `chain show --format html`, laid out so that every label stays inside the
/// drawing: x is the order of events (evenly spaced, so a reuse 300 ms after the exchange is as
/// visible as one a day later), one lane per token, and under each incident's lane the full
/// address, User-Agent and device of both sides, wrapped to the drawing's width.
extension LineageHTML {
    /// Pixels: the drawing's width (a 1280-pixel window holds it beside the page's margins), a
    /// token's lane, the lane labels' column, the room right of the last event for its rotated
    /// time, the spacing of events, and the height of one line of label text.
    static let width = 1180
    static let laneHeight = 44
    static let left = 120
    static let right = 110
    static let steps = 90...150
    static let lineHeight = 16
    /// An upper bound on one column of the labels' monospace font at 12 px (DejaVu Sans Mono,
    /// Menlo and Consolas advance 0.6 em = 7.2 px or less).
    static let column = 7.5
    /// The longest value a label shows whole (a User-Agent may run to kilobytes); the tables
    /// under the drawing show every value in full.
    static let maxLabelCharacters = 400

    /// The SVG element.
    static func svg(_ lineage: ChainLineage) -> String {
        var instants = Set<Instant>()
        for token in lineage.tokens {
            instants.insert(token.issuedAt)
            if let end = token.endedAt { instants.insert(end) }
        }
        for incident in lineage.incidents {
            instants.insert(incident.attempt.at)
            if let at = incident.original?.at { instants.insert(at) }
        }
        if let revoked = lineage.revokedAt { instants.insert(revoked) }
        let order = instants.sorted()
        let step = order.count > 1 ? min(steps.upperBound, max(steps.lowerBound, (width - left - right) / (order.count - 1))) : steps.upperBound
        let drawingWidth = max(width, left + max(order.count - 1, 0) * step + right)
        func x(_ instant: Instant) -> Int { left + (order.firstIndex(of: instant) ?? 0) * step }
        /// `x` moved left so that `text` starting there ends inside the drawing.
        func fitted(_ x: Int, _ text: String) -> Int { max(8, min(x, drawingWidth - 8 - pixels(text))) }

        // Lanes top to bottom: the tokens, then each incident with the lines saying who.
        let top = 20
        let tokenY = lineage.tokens.indices.map { top + $0 * laneHeight + laneHeight / 2 }
        let indent = 10  // "original  " and "attempt   "
        let lineColumns = Int(Double(drawingWidth - 24 - 8) / column)
        var incidentY: [Int] = []
        var whoLines: [[String]] = []
        var y = top + lineage.tokens.count * laneHeight
        for incident in lineage.incidents {
            incidentY.append(y + laneHeight / 2)
            let lines = wrap("attempt   " + who(incident.attempt), columns: lineColumns, indent: indent)
                + wrap("original  " + (incident.original.map(who) ?? "- (pruned)"), columns: lineColumns, indent: indent)
            whoLines.append(lines)
            y += laneHeight + lines.count * lineHeight + 8
        }
        let axis = y + 10
        let height = axis + 80

        var parts: [String] = []
        for instant in order {
            parts.append(##"<line x1="\##(x(instant))" y1="\##(top)" x2="\##(x(instant))" y2="\##(axis)" stroke="#d0d7de" stroke-dasharray="3 3"/>"##)
            parts.append(##"<text x="\##(x(instant))" y="\##(axis + 14)" transform="rotate(30 \##(x(instant)) \##(axis + 14))">\##(clock(instant))</text>"##)
        }
        let end = lineage.revokedAt ?? order.last ?? lineage.createdAt
        for (lane, token) in lineage.tokens.enumerated() {
            let from = x(token.issuedAt), to = max(x(token.endedAt ?? end), from + 24)
            let colour = switch token.end {
            case .exchanged?: "#8c959f"
            case .replaced?: "#d4a72c"
            case nil: lineage.revocation == nil ? "#1a7f37" : "#cf222e"
            }
            parts.append(##"<text x="8" y="\##(tokenY[lane] + 4)">gen \##(token.generation)</text>"##)
            parts.append(##"<rect x="\##(from)" y="\##(tokenY[lane] - 9)" width="\##(to - from)" height="18" rx="4" fill="\##(colour)"/>"##)
            let label = (token.end?.rawValue ?? (lineage.revocation == nil ? "head" : "head, revoked")) + " · " + capped(token.issuedTo?.ip ?? "-")
            parts.append(##"<text x="\##(fitted(from + 6, label))" y="\##(tokenY[lane] - 13)" fill="#57606a">\##(HTMLText.escape(label))</text>"##)
        }
        for (index, incident) in lineage.incidents.enumerated() {
            let laneY = incidentY[index]
            let name = incident.kind == .reuseDetected ? "REUSE" : "FORK"
            let tokenLane = lineage.tokens.firstIndex { $0.generation == incident.generation && $0.end != nil } ?? 0
            let forkX = incident.original.map { x($0.at) } ?? left
            let attemptX = x(incident.attempt.at)
            // The fork point: where the token was first used; the branch runs to the second use.
            parts.append(##"<path d="M \##(forkX) \##(tokenY[tokenLane]) C \##(forkX) \##(laneY), \##(forkX) \##(laneY), \##(attemptX) \##(laneY)" fill="none" stroke="#cf222e" stroke-width="2" stroke-dasharray="6 3"/>"##)
            parts.append(##"<circle cx="\##(forkX)" cy="\##(tokenY[tokenLane])" r="6" fill="#fff" stroke="#cf222e" stroke-width="3"/>"##)
            // Left of the fork point, where the next lane is still empty; right of it when too close to the edge.
            let forkLabel = "fork point: first use"
            let forkLabelX = forkX - 10 - pixels(forkLabel) >= 8 ? forkX - 10 - pixels(forkLabel) : fitted(forkX + 10, forkLabel)
            parts.append(##"<text x="\##(forkLabelX)" y="\##(tokenY[tokenLane] + 24)" fill="#cf222e">\##(forkLabel)</text>"##)
            parts.append(##"<circle cx="\##(attemptX)" cy="\##(laneY)" r="8" fill="#cf222e"/>"##)
            parts.append(##"<text x="8" y="\##(laneY + 4)" fill="#cf222e" font-weight="bold">\##(name)</text>"##)
            let again = "gen \(incident.generation) presented again"
            let againX = attemptX + 14 + pixels(again) <= drawingWidth - 8 ? attemptX + 14 : attemptX - 14 - pixels(again)
            parts.append(##"<text x="\##(max(8, againX))" y="\##(laneY + 4)" fill="#cf222e" font-weight="bold">\##(again)</text>"##)
            for (line, text) in whoLines[index].enumerated() {
                // A white outline keeps the text readable across the dashed time lines.
                parts.append(##"<text x="24" y="\##(laneY + 30 + line * lineHeight)" fill="#1b1f24" stroke="#fff" stroke-width="3" paint-order="stroke">\##(HTMLText.escape(text))</text>"##)
            }
        }
        return ##"<svg xmlns="http://www.w3.org/2000/svg" width="\##(drawingWidth)" height="\##(height)" viewBox="0 0 \##(drawingWidth) \##(height)" role="img" aria-label="chain timeline">"##
            + "\n" + parts.joined(separator: "\n") + "\n</svg>"
    }

    /// `09:24:10.100` (the date is in the header).
    static func clock(_ instant: Instant) -> String {
        let text = instant.rfc3339Milliseconds
        return String(text.dropFirst(11).dropLast())
    }

    /// One side of an incident: `address · User-Agent · device id` (a no-break space keeps
    /// "device" with its id when the line wraps).
    static func who(_ request: ChainLineage.Request) -> String {
        [request.ip, request.userAgent, request.deviceID.map { "device\u{A0}" + $0 }].map { capped($0 ?? "-") }.joined(separator: " · ")
    }

    /// `text`, or its first `maxLabelCharacters` characters and how many more the tables show.
    static func capped(_ text: String) -> String {
        guard text.count > maxLabelCharacters else { return text }
        return String(text.prefix(maxLabelCharacters)) + "… (\(text.count - maxLabelCharacters) more characters in the table below)"
    }

    /// `text` in lines of at most `columns` columns, broken at spaces, or inside a word longer
    /// than a line; lines after the first are indented by `indent` spaces.
    static func wrap(_ text: String, columns: Int, indent: Int) -> [String] {
        var lines: [String] = []
        var line = "", lineColumns = 0
        for word in text.split(separator: " ", omittingEmptySubsequences: false) {
            let wordColumns = word.reduce(0) { $0 + Self.columns($1) }
            if !line.isEmpty, lineColumns + 1 + wordColumns > columns {
                lines.append(line)
                line = String(repeating: " ", count: indent)
                lineColumns = indent
            } else if !line.isEmpty {
                line += " "
                lineColumns += 1
            }
            for character in word {
                let width = Self.columns(character)
                if lineColumns + width > columns, lineColumns > indent {
                    lines.append(line)
                    line = String(repeating: " ", count: indent)
                    lineColumns = indent
                }
                line.append(character)
                lineColumns += width
            }
        }
        return lines + [line]
    }

    /// Pixels `text` takes at most in the labels' font.
    static func pixels(_ text: String) -> Int {
        Int((Double(text.reduce(0) { $0 + columns($1) }) * column).rounded(.up))
    }

    /// Columns a character takes once escaped by `HTMLText`: a control or format scalar shows as
    /// `\u{…}`, `\` as `\\`; a combining mark adds nothing; Latin, Greek and Cyrillic take one
    /// column of the monospace fonts; anything else may come from a wider fallback font (CJK,
    /// emoji), counted as two.
    static func columns(_ character: Character) -> Int {
        var total = 0
        for scalar in character.unicodeScalars {
            if scalar == "\\" {
                total += 2
            } else if scalar.isControlOrFormat {
                total += scalar.visibleEscape.count
            } else if scalar.properties.generalCategory == .nonspacingMark {
                continue
            } else if scalar.value < 0x530 {
                total += 1
            } else {
                total += 2
            }
        }
        return total
    }
}
