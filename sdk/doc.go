// Package sdk is what a Go plugin author imports to write a skillhost skill.
//
// A skill is a WebAssembly export that reads JSON input and writes JSON
// output. Handle does the plumbing: it decodes the Extism input into your
// input type, calls your function, encodes its result as the output and turns
// a returned error into a structured error the host understands
// ({"message":…,"code":…,"data":…}). A panic is not recovered: it traps, and
// the host reports it as a failed skill (reason "trap").
//
// A complete plugin:
//
//	package main
//
//	import (
//		"strings"
//
//		"github.com/skillhost/skillhost/sdk"
//	)
//
//	type In struct {
//		Text string `json:"text"`
//	}
//
//	type Out struct {
//		Text string `json:"text"`
//	}
//
//	func upper(ctx *sdk.Context, in In) (Out, error) {
//		if in.Text == "" {
//			return Out{}, sdk.InvalidInput("text is empty")
//		}
//		ctx.Log(sdk.LevelInfo, "upper-casing")
//		return Out{Text: strings.ToUpper(in.Text)}, nil
//	}
//
//	//go:wasmexport uppercase
//	func uppercase() int32 { return sdk.Handle(upper) }
//
//	func main() {}
//
// Build it with the standard Go toolchain:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o uppercase.wasm .
//
// The Context gives the skill what the host grants it: Config reads the
// manifest's permissions.config, Log and Logf write to the host log
// (attributed to the plugin, skill and session, rate-limited), Progress
// reports progress to the caller, Get and Set read and write the calling
// session's context, Fetch makes an HTTP request to a host listed in the
// manifest's permissions.allowed_hosts, and CallAgent calls another agent
// (a plugin of the host or a remote agent) listed in permissions.agents.
//
// The package compiles for any target so its pure parts can be tested with
// plain `go test`; the functions that talk to the host only work inside a
// plugin built for GOOS=wasip1 GOARCH=wasm.
//
// A Context, like the plugin instance it runs in, is used by one call at a
// time; do not share it between goroutines.
package sdk
