import Foundation
import Testing

/// Issue 22 point 8: the incident page's timeline, rendered by headless Chromium at 1280 px, keeps
/// every label inside the drawing, with both sides' address, User-Agent and device readable.
struct TimelineLayoutTests {
    static let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Measures every `<text>` of every `<svg>` against its drawing, in CSS pixels, after layout:
    /// the page is loaded with this script added (and the page's CSP, which forbids scripts,
    /// removed from the copy), and Chromium's `--dump-dom` prints what it wrote.
    static let measure = """
        <script>
        const texts = [];
        for (const svg of document.querySelectorAll('svg')) {
          const box = svg.getBoundingClientRect();
          for (const text of svg.querySelectorAll('text')) {
            const r = text.getBoundingClientRect();
            texts.push({ text: text.textContent, left: r.left - box.left, right: r.right - box.left, top: r.top - box.top,
                         bottom: r.bottom - box.top, width: box.width, height: box.height });
          }
        }
        const svgs = [...document.querySelectorAll('svg')].map(s => s.getBoundingClientRect().right);
        const pre = document.createElement('pre');
        pre.id = 'measure';
        pre.textContent = JSON.stringify({ texts, svgRight: svgs, innerWidth: window.innerWidth, images: document.querySelectorAll('img').length });
        document.body.appendChild(pre);
        </script>
        """

    struct Measured: Decodable {
        struct Text: Decodable { var text: String, left, right, top, bottom, width, height: Double }
        var texts: [Text]
        var svgRight: [Double]
        var innerWidth: Double
        var images: Int
    }

    /// `html` as laid out by Chromium in a 1280×900 window.
    static func layOut(_ html: String) throws -> Measured {
        let chromium = try #require(chromium)
        let directory = NSTemporaryDirectory() + "baton-chromium-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let page = directory + "/chain.html"
        var instrumented = html
        if let csp = html.range(of: #"<meta http-equiv="Content-Security-Policy"[^>]*>"#, options: .regularExpression) { instrumented.removeSubrange(csp) }
        instrumented = instrumented.replacingOccurrences(of: "</body>", with: measure + "\n</body>")
        try instrumented.write(toFile: page, atomically: true, encoding: .utf8)
        let result = try runCommand(chromium, ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=\(directory)/profile",
                                               "--window-size=1280,900", "--virtual-time-budget=2000", "--dump-dom", "file://\(page)"],
                                    environment: ["HOME": directory])
        let json = try #require(result.stdout.range(of: #"(?<=<pre id="measure">).*(?=</pre>)"#, options: .regularExpression), "chromium: \(result.stderr.suffix(2000))")
        let text = String(result.stdout[json]).replacingOccurrences(of: "&amp;", with: "&").replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&quot;", with: "\"")
        return try JSONDecoder().decode(Measured.self, from: Data(text.utf8))
    }

    /// The attacker's side of a reuse: a browser's User-Agent and a device id; or a User-Agent of
    /// wide characters with a bidi override, one run without a space longer than the drawing,
    /// 1000 characters in all, and a CJK device id.
    static let attackers: [(userAgent: String, device: String, wholeWords: Bool)] = [
        ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.91",
         "evil-laptop-of-the-attacker", true),
        ("\u{202E}gnp.exe Ｗ" + String(repeating: "ＷＷ😀ﷺ", count: 60) + " " + String(repeating: "W@", count: 300),
         "攻撃者のノートパソコン-" + String(repeating: "长", count: 60), false),
    ]

    @Test(.enabled(if: chromium != nil, "headless Chromium is not installed (scripts/test installs Debian's chromium)"), arguments: attackers.indices)
    func everyTimelineLabelFitsTheDrawingAtTypicalWidth(_ attacker: Int) async throws {
        let (browser, device, wholeWords) = Self.attackers[attacker]
        let server = try await offPool { try ServerProcess() }
        try await offPool { () throws in
            defer { server.stop() }
            try server.addUser("alice")
            let app = "BatonApp/2.3 (iPhone; iOS 18.1; Scale/3.00) CFNetwork/1568.100.1 Darwin/24.0.0"
            let response = try server.request("POST", "/v1/login", headers: [("User-Agent", app)],
                                              json: #"{"username":"alice","password":"correct horse battery","device_id":"phone-1","device_class":"mobile","device_name":"Alice’s iPhone 15 Pro Max"}"#)
            let first = try #require(response.json["token"] as? String)
            let chain = try #require(response.json["chain_id"] as? String)
            let second = try server.request("POST", "/v1/exchange", token: first, headers: [("User-Agent", app), ("X-Device-Id", "phone-1"),
                                                                                              ("X-Forwarded-For", "2001:db8:85a3:1234:5678:8a2e:370:7334")]).json["token"] as! String
            #expect(try server.request("POST", "/v1/exchange", token: second, headers: [("User-Agent", app), ("X-Device-Id", "phone-1")]).status == 200)
            #expect(try server.request("POST", "/v1/exchange", token: first, headers: [("User-Agent", browser), ("X-Device-Id", device),
                                                                                        ("X-Forwarded-For", "2001:db8:ffff:ffff:ffff:ffff:ffff:6666")]).error == "token_reused")
            let db = ["--db", server.databasePath]
            // The device name in every format of chain show.
            #expect(try runBaton(["admin", "chain", "show", chain] + db).1.hasPrefix("Chain \(chain) of 'alice', device phone-1 'Alice’s iPhone 15 Pro Max' (mobile)\n"))
            #expect(try runBaton(["admin", "chain", "show", chain, "--format", "json"] + db).1.contains(#""device_name":"Alice’s iPhone 15 Pro Max""#))
            let (status, html, _) = try runBaton(["admin", "chain", "show", chain, "--format", "html"] + db)
            #expect(status == 0)
            #expect(html.contains("<b>phone-1</b> ‘Alice’s iPhone 15 Pro Max’ (mobile)"))
            let measured = try Self.layOut(html)
            #expect(measured.images == 0)
            #expect(measured.svgRight.allSatisfy { $0 <= measured.innerWidth }, "\(measured.svgRight) in \(measured.innerWidth)")
            #expect(!measured.texts.isEmpty)
            for text in measured.texts {
                #expect(text.left >= 0 && text.right <= text.width + 0.5 && text.top >= 0 && text.bottom <= text.height + 0.5, "\(text)")
            }
            // Both sides of the reuse: address, User-Agent (wrapped between words at most) and device.
            let drawn = measured.texts.map(\.text).joined(separator: " ")
            for word in ["2001:db8:ffff:ffff:ffff:ffff:ffff:6666", "2001:db8:85a3:1234:5678:8a2e:370:7334", "phone-1"]
                + (app + (wholeWords ? " " + browser + " " + device : "")).split(separator: " ").map(String.init) {
                #expect(drawn.contains(word), "\(word) not drawn")
            }
            if !wholeWords {  // the override shown, not obeyed; the rest of a 1000-character agent in the table
                #expect(drawn.contains(#"\u{202e}gnp.exe"#) && drawn.contains("攻撃者のノートパソコン") && drawn.contains("more characters in the table below"))
            }
        }
    }
}
