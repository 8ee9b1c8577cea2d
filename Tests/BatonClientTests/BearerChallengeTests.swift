@testable import BatonClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// Reading Baton's errors from the body, the X-Baton-Error header or the challenge.
struct BearerChallengeTests {
    @Test(arguments: [
        (#"Bearer realm="baton", error="insufficient_user_authentication", error_description="More recent authentication is required", max_age=300"#, 300),
        (#"Bearer realm="baton", error="insufficient_user_authentication", max_age="5""#, 5),  // RFC 9470's own quoted form
        (#"bearer error="insufficient_user_authentication",max_age=60"#, 60),
    ])
    func challengeParametersAreReadInTokenAndQuotedForm(header: String, maxAge: Int) {
        let challenge = BearerChallenge(header)
        #expect(challenge.error == "insufficient_user_authentication" && challenge.maxAge == maxAge)
    }

    @Test func quotedValuesKeepCommasAndEscapes() {
        let challenge = BearerChallenge(#"Bearer realm="a, \"b\"", error="invalid_token""#)
        #expect(challenge.parameters == ["realm": #"a, "b""#, "error": "invalid_token"])
    }

    @Test func otherSchemesAndBareChallengesHaveNoError() {
        #expect(BearerChallenge(#"Basic realm="x""#).parameters.isEmpty)
        #expect(BearerChallenge(#"Bearer realm="baton""#).error == nil)
    }

    func response(_ headers: [String: String]) -> HTTPURLResponse {
        HTTPURLResponse(url: URL(string: "http://127.0.0.1/")!, statusCode: 401, httpVersion: "HTTP/1.1", headerFields: headers)!
    }

    @Test func errorComesFromTheBodyThenTheHeaderThenTheChallenge() {
        let body = Data(#"{"error":"insufficient_user_authentication","error_description":"…","max_age":300}"#.utf8)
        #expect(ServerError.from(body: body, response: response([:]))?.maxAge == 300)
        let header = response(["X-Baton-Error": #"{"error":"chain_revoked","reason":"logout"}"#])
        #expect(ServerError.from(body: Data(), response: header) == ServerError(code: "chain_revoked", reason: "logout"))
        let challenge = response(["WWW-Authenticate": #"Bearer realm="baton", error="insufficient_user_authentication", max_age=120"#])
        #expect(ServerError.from(body: Data("<html>".utf8), response: challenge) == ServerError(code: "insufficient_user_authentication", maxAge: 120))
        #expect(ServerError.from(body: Data(), response: response([:])) == nil)
    }
}
