import Foundation
import Testing

/// Issue 17, findings 3, 6 and 8 (duplicate keys): text an attacker controls (a User-Agent, an
/// X-Device-Id, a login's fields, a JSON body) through a real server to `baton admin`.
struct HostileTextTests {
    /// Every scalar that fuses with a following `<` into one `Character` under this toolchain's
    /// grapheme rules: the Grapheme_Cluster_Break=Prepend scalars (U+0600…U+0605, U+06DD,
    /// U+070F, U+0890, U+0891, U+08E2, U+0D4E, U+110BD, U+110CD, …), found rather than listed.
    static let prependScalars: [Unicode.Scalar] = (0...0x10FFFF).compactMap { value in
        guard let scalar = Unicode.Scalar(value), scalar.value != 0x0D, String(scalar).count == 1,
              (String(scalar) + "<").count == 1 else { return nil }
        return scalar
    }

    /// Prepend scalars fused with each of `<`, `>`, `&`, `"`, `'`, and combining marks after
    /// them: a tag with an event handler if any of them were left raw.
    static func payload(_ scalars: some Sequence<Unicode.Scalar>) -> String {
        var text = ""
        for scalar in scalars {
            let p = String(scalar)
            text += "\(p)<img src=x onerror=alert(document.domain) \(p)>\(p)&amp;\(p)\"\(p)' "
        }
        return text + "<\u{301}b>x</\u{301}b> \"\u{301}' \u{20DD}&\u{301}lt; <\u{338}svg onload=alert(1)>\u{338}"
    }

    /// The element names in `html` (`<name` where a tag may open).
    static func tagNames(_ html: String) -> Set<String> {
        var names = Set<String>()
        let bytes = Array(html.utf8)
        for index in bytes.indices where bytes[index] == UInt8(ascii: "<") {
            let name = bytes[(index + 1)...].prefix { $0 == UInt8(ascii: "!") || $0 == UInt8(ascii: "/") || (0x41...0x5A).contains($0 & 0xDF) || (0x30...0x39).contains($0) }
            if !name.isEmpty { names.insert(String(decoding: name, as: UTF8.self).lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "/"))) }
        }
        return names
    }

    static let pageTags: Set<String> = ["!doctype", "html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "b", "svg", "line",
                                        "text", "tspan", "rect", "path", "circle", "g", "table", "tr", "th", "td", "footer"]

    @Test func prependScalarBeforeAnAngleBracketIsNoLiveTagInChainShowHTML() async throws {
        #expect(Self.prependScalars.count >= 20 && Self.prependScalars.contains("\u{600}") && Self.prependScalars.contains("\u{110BD}"))
        let server = try await offPool { try ServerProcess() }
        try await offPool { () throws in
            defer { server.stop() }
            try server.addUser("alice")
            // The issue's User-Agent on the login, every prepend scalar on the exchange and the reuse.
            let login = try server.login(headers: [("User-Agent", "\u{600}<img src=x onerror=alert(document.domain) \u{600}>")])
            let first = login["token"] as! String
            let hostile = Self.payload(Self.prependScalars)
            #expect(try server.request("POST", "/v1/exchange", token: first, headers: [("User-Agent", hostile)]).status == 200)
            // U+0D4E is a letter (Lo), so a device id may carry it; the reuse plants it through X-Device-Id.
            #expect(try server.request("POST", "/v1/exchange", token: first,
                                       headers: [("User-Agent", hostile), ("X-Device-Id", "\u{D4E}<img src=x onerror=alert(1) \u{D4E}>")]).error == "token_reused")
            let (status, html, err) = try runBaton(["admin", "chain", "show", login["chain_id"] as! String, "--format", "html", "--db", server.databasePath])
            #expect(status == 0 && err.isEmpty)
            #expect(html.contains("onerror"))  // the text is there, as text
            #expect(Self.tagNames(html).subtracting(Self.pageTags).isEmpty, "\(Self.tagNames(html).subtracting(Self.pageTags))")
            #expect(html.contains(#"<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'"#))
        }
    }

    @Test func c1AndBidiControlsInLoginFieldsAndXDeviceIdAreRefusedNamingTheField() async throws {
        let server = try await offPool { try ServerProcess() }
        try await offPool { () throws in
            defer { server.stop() }
            try server.addUser("alice")
            func login(username: String = "alice", device: String = "phone-1", name: String = "Phone") throws -> (Int, String?, String) {
                let body = #"{"username":"\#(username)","password":"correct horse battery","device_id":"\#(device)","device_class":"mobile","device_name":"\#(name)"}"#
                let response = try server.request("POST", "/v1/login", json: body)
                return (response.status, response.error, response.json["error_description"] as? String ?? "")
            }
            for (field, hostile) in [("device_id", "phone\u{9B}2J"), ("device_id", "phone\u{202E}1-enohp"), ("device_id", "\u{2066}phone\u{2069}"),
                                     ("device_id", "ph\u{200B}one"), ("device_id", "phone\u{85}"), ("device_name", "\u{9B}31mred"),
                                     ("device_name", "Alice\u{202E}s"), ("username", "al\u{9B}ice"), ("username", "alice\u{2067}")] {
                let answer = try login(username: field == "username" ? hostile : "alice", device: field == "device_id" ? hostile : "phone-1",
                                       name: field == "device_name" ? hostile : "Phone")
                #expect(answer.0 == 400 && answer.1 == "invalid_request" && answer.2.hasPrefix(field + " "), "\(field) \(hostile.unicodeScalars.map { $0.value }): \(answer)")
            }
            let token = try server.login()["token"] as! String
            for hostile in ["phone\u{9B}2J", "phone\u{202E}", String(repeating: "d", count: 257), ""] {
                let response = try server.request("POST", "/v1/exchange", token: token, headers: [("X-Device-Id", hostile)])
                #expect(response.status == 400 && response.error == "invalid_request", "\(hostile.prefix(8)): \(response.status)")
                #expect((response.json["error_description"] as? String)?.hasPrefix("X-Device-Id ") == true, "\(response.text)")
            }
            // Refused before the store: the token was not consumed.
            #expect(try server.request("POST", "/v1/exchange", token: token, headers: [("X-Device-Id", "phone-1")]).status == 200)
        }
    }

    @Test func controlCharactersFromTheNetworkAreEscapedInAdminOutput() async throws {
        let server = try await offPool { try ServerProcess() }
        try await offPool { () throws in
            defer { server.stop() }
            try server.addUser("alice")
            let login = try server.login()
            let first = login["token"] as! String
            #expect(try server.request("POST", "/v1/exchange", token: first).status == 200)
            // A User-Agent is never refused: CSI (U+009B) erasing the screen, a right-to-left override, NEL.
            let agent = "curl\u{9B}2J\u{9B}H\u{202E}lave\u{85}x\\u{9b}"
            #expect(try server.request("POST", "/v1/exchange", token: first, headers: [("User-Agent", agent)]).error == "token_reused")
            let db = ["--db", server.databasePath]
            let escaped = #"curl\u{9b}2J\u{9b}H\u{202e}lave\u{85}x\\u{9b}"#
            for command in [["admin", "audit"], ["admin", "audit", "--kind", "reuse_detected"], ["admin", "chain", "show", login["chain_id"] as! String]] {
                let (status, out, _) = try runBaton(command + db)
                #expect(status == 0)
                #expect(!out.unicodeScalars.contains { $0.value >= 0x80 && $0.value <= 0x9F || $0.properties.generalCategory == .format }, "\(command)")
                #expect(out.contains(escaped), "\(command): \(out)")
            }
            for command in [["admin", "audit", "--format", "json"], ["admin", "chain", "show", login["chain_id"] as! String, "--format", "json"]] {
                let (status, out, _) = try runBaton(command + db)
                #expect(status == 0 && !out.unicodeScalars.contains { $0.value >= 0x80 && $0.value <= 0x9F || $0.properties.generalCategory == .format })
                #expect(out.contains(#"curl\u009b2J\u009bH\u202elave\u0085x\\u{9b}"#), "\(command): \(out)")  // JSON escapes, same text
                let last = try #require(out.split(separator: "\n").last)
                #expect(try JSONSerialization.jsonObject(with: Data(last.utf8)) is [String: Any])
            }
        }
    }

    @Test func duplicateJSONKeysAreRefusedNamingTheKey() async throws {
        let server = try await offPool { try ServerProcess() }
        try await offPool { () throws in
            defer { server.stop() }
            try server.addUser("alice")
            try server.addUser("bob")
            let rest = #""password":"correct horse battery","device_id":"phone-1""#
            for (body, key) in [(#"{"username":"alice","username":"bob",\#(rest)}"#, "username"),
                                (#"{"username":"alice","user\u006eame":"bob",\#(rest)}"#, "username"),
                                (#"{"username":"bob",\#(rest),"device_id":"phone-2"}"#, "device_id"),
                                (#"{"username":"bob",\#(rest),"extra":{"a":1,"b":[{"c":1,"c":2}]}}"#, "c"),
                                (#"{"username":"bob",\#(rest),"extra":{"a":1,"a":{}}}"#, "a")] {
                let response = try server.request("POST", "/v1/login", json: body)
                #expect(response.status == 400 && response.error == "invalid_request", "\(body): \(response.text)")
                #expect(response.json["error_description"] as? String == "The request body has the key '\(key)' twice.", "\(response.text)")
            }
            // The same keys in different objects are not duplicates.
            let fine = try server.request("POST", "/v1/login", json: #"{"username":"bob",\#(rest),"extra":{"username":1,"a":{"a":2}},"more":[{"a":1},{"a":1}]}"#)
            #expect(fine.status == 200, "\(fine.text)")
            let token = fine.json["token"] as! String
            let confirm = try server.request("POST", "/v1/confirm", token: token, json: #"{"password":"wrong","password":"correct horse battery"}"#)
            #expect(confirm.status == 400 && confirm.json["error_description"] as? String == "The request body has the key 'password' twice.")
        }
    }
}
