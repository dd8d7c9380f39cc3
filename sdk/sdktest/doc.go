// Package sdktest is a fake skillhost host for unit-testing skill handlers
// with plain `go test` on your machine, no Wasm involved: the handler gets a
// real *sdk.Context whose host calls (config, log, progress, the session
// context, HTTP, agent calls) are answered by a Host you configure and
// inspect.
//
//	func TestGreet(t *testing.T) {
//		h := sdktest.New()
//		h.Config["greeting"] = "Hi"
//		out, err := greet(h.Context(), In{Name: "Ada"})
//		if err != nil || out.Greeting != "Hi, Ada" { … }
//		if logs := h.Logs(); len(logs) != 1 { … }
//	}
//
// The fake speaks the same JSON as the real host functions
// (docs/HOST_FUNCTIONS.md) and applies their main rules: context keys of
// 1..256 bytes, values up to 1 MiB and TTLs; http_fetch methods GET, HEAD
// and POST on http(s) URLs whose host is in AllowedHosts; agent calls only
// to AllowedAgents; failures carry the host's codes (sdk.CodeNoSession,
// sdk.CodeHostNotAllowed, …). It does not rate-limit.
//
// A Host is safe for concurrent use.
package sdktest
