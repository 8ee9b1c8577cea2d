@testable import BatonHTTP
import Testing

/// Deterministic fuzzing of the pure parser: mutations of valid requests must never crash it,
/// and whatever it accepts must be consistent with itself.
struct RequestParserFuzzTests {
    /// A small, seeded xorshift generator, so a failure reproduces exactly.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(bound, 1))) }
    }

    static func mutate(_ input: [UInt8], _ random: inout Generator) -> [UInt8] {
        var bytes = input
        for _ in 0..<(1 + random.below(4)) {
            let index = random.below(bytes.count + 1)
            switch random.below(5) {
            case 0 where index < bytes.count: bytes[index] ^= UInt8(1 << random.below(8))
            case 1: bytes.insert(UInt8(random.below(256)), at: index)
            case 2 where index < bytes.count: bytes.remove(at: index)
            case 3: bytes.insert(contentsOf: [13, 10, 58, 32, 0, 9, 44][random.below(7)...].prefix(1 + random.below(3)), at: index)
            default: bytes = Array(bytes.prefix(index))
            }
        }
        return bytes
    }

    @Test func mutatedRequestsNeverCrashAndStayConsistent() {
        var random = Generator(state: 0x9E37_79B9_7F4A_7C15)
        let corpus = RequestParserTests.valid.map { Array($0.0.utf8) } + [Array("POST /v1/login HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello".utf8)]
        var outcomes = (complete: 0, partial: 0, rejected: 0)
        for iteration in 0..<200_000 {
            let input = Self.mutate(corpus[iteration % corpus.count], &random)
            let whole: Result<RequestParser.ParseResult, HTTPParseError> = Result { () throws(HTTPParseError) in try RequestParser.parse(input[...]) }
            switch whole {
            case .success(.complete(let request, let consumed)):
                outcomes.complete += 1
                #expect(consumed > 0 && consumed <= input.count, "iteration \(iteration)")
                // The consumed prefix alone parses to the same request.
                #expect((try? RequestParser.parse(input[..<consumed])) == .complete(request, consumed: consumed), "iteration \(iteration)")
            case .success(.needMoreData): outcomes.partial += 1
            case .failure: outcomes.rejected += 1
            }
            // Feeding the same bytes in random chunks reaches the same answer.
            if iteration % 16 == 0 {
                var end = 0
                var incremental: Result<RequestParser.ParseResult, HTTPParseError> = .success(.needMoreData)
                while end < input.count {
                    end = min(input.count, end + 1 + random.below(8))
                    incremental = Result { () throws(HTTPParseError) in try RequestParser.parse(input[..<end]) }
                    if case .success(.needMoreData) = incremental { continue }
                    break
                }
                if input.isEmpty { incremental = whole }
                #expect(Self.sameOutcome(incremental, whole), "iteration \(iteration)")
            }
        }
        // The mutations reach all three outcomes (a fuzzer that only ever fails proves little).
        #expect(outcomes.complete > 1000 && outcomes.partial > 1000 && outcomes.rejected > 1000, "\(outcomes)")
    }

    /// Same outcome kind; for complete requests, the same request.
    static func sameOutcome(_ a: Result<RequestParser.ParseResult, HTTPParseError>, _ b: Result<RequestParser.ParseResult, HTTPParseError>) -> Bool {
        switch (a, b) {
        case (.success(let x), .success(let y)): x == y
        case (.failure(let x), .failure(let y)): x.status == y.status
        default: false
        }
    }
}
