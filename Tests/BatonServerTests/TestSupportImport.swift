// The server and nginx launchers live in BatonTestSupport, shared with BatonClientTests.
@_exported import BatonTestSupport
