package devkit

// goFiles are the Go scaffold's templates.
var goFiles = []scaffoldFile{
	{"go.mod", `module [[.Name]]

go [[.GoVersion]]

require (
	github.com/extism/go-pdk [[.PDKVersion]] // indirect
	[[.SDKModule]] v0.0.0
)

[[.SDKNote]]
replace [[.SDKModule]] => [[.SDKReplace]]
`},
	{".gitignore", "*.wasm\n"},
	{"plugin.yaml", helloManifest},
	{"logic.go", `package main

import (
	"strings"

	"github.com/skillhost/skillhost/sdk"
)

// HelloIn is the input of [[.Skill]].
type HelloIn struct {
	Name    string ` + "`json:\"name\"`" + `
	Excited bool   ` + "`json:\"excited,omitempty\"`" + `
}

// HelloOut is the output of [[.Skill]].
type HelloOut struct {
	Greeting string ` + "`json:\"greeting\"`" + `
}

// hello is the skill [[.Skill]]. The Context is what the host grants the
// call: here the optional config key "greeting" (permissions.config) and the
// host log. Unit-test it with package sdktest (logic_test.go).
func hello(ctx *sdk.Context, in HelloIn) (HelloOut, error) {
	name := strings.TrimSpace(in.Name)
	if name == "" {
		return HelloOut{}, sdk.InvalidInput("name is empty")
	}
	greeting, ok := ctx.Config("greeting")
	if !ok {
		greeting = "Hello"
	}
	end := "."
	if in.Excited {
		end = "!"
	}
	ctx.Logf(sdk.LevelDebug, "greeting %q", name)
	return HelloOut{Greeting: greeting + ", " + name + end}, nil
}
`},
	{"logic_test.go", `package main

import (
	"errors"
	"maps"
	"testing"

	"github.com/skillhost/skillhost/sdk"
	"github.com/skillhost/skillhost/sdk/sdktest"
)

func TestHello(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		config map[string]string
		in     HelloIn
		want   string
	}{
		{"plain", nil, HelloIn{Name: "world"}, "Hello, world."},
		{"excited and trimmed", nil, HelloIn{Name: "  Ada ", Excited: true}, "Hello, Ada!"},
		{"configured greeting", map[string]string{"greeting": "Hi"}, HelloIn{Name: "Bo"}, "Hi, Bo."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			host := sdktest.New() // a fake host: config, logs, session context, HTTP
			maps.Copy(host.Config, tt.config)
			got, err := hello(host.Context(), tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.Greeting != tt.want {
				t.Errorf("greeting = %q, want %q", got.Greeting, tt.want)
			}
			if logs := host.Logs(); len(logs) != 1 || logs[0].Level != sdk.LevelDebug {
				t.Errorf("logs = %v, want one debug line", logs)
			}
		})
	}
}

func TestHelloRefusesEmptyName(t *testing.T) {
	t.Parallel()
	_, err := hello(sdktest.New().Context(), HelloIn{Name: "  "})
	var se *sdk.Error
	if !errors.As(err, &se) || se.Code != sdk.CodeInvalidInput {
		t.Fatalf("error = %v, want an invalid_input error", err)
	}
}
`},
	{"main.go", `//go:build wasip1

// Command [[.Name]] is a skillhost plugin. Build it with
//
//	skillhost plugin build .
//
// (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o [[.Name]].wasm .)
package main

import "github.com/skillhost/skillhost/sdk"

// helloExport is the wasm export named in plugin.yaml (skills[0].function).
//
//go:wasmexport [[.Skill]]
func helloExport() int32 { return sdk.Handle(hello) }

func main() {}
`},
	{"nowasm.go", `//go:build !wasip1

package main

import (
	"fmt"
	"os"
)

// main explains itself: a plugin only runs inside skillhost, built for
// GOOS=wasip1 GOARCH=wasm.
func main() {
	fmt.Fprintln(os.Stderr, "this is a skillhost plugin; build it with: skillhost plugin build DIR")
	os.Exit(2)
}
`},
}

// helloManifest is the Go and AssemblyScript scaffolds' plugin.yaml: one
// skill <name>_hello greeting someone by name, with examples that check an
// output and an error.
const helloManifest = `name: [[.Name]]
version: 0.1.0
description: A skillhost plugin scaffolded by "skillhost plugin new"
wasm: [[.Name]].wasm
limits:
  timeout: 2s
  memory: 64MiB
  output: 1MiB
  concurrency: 4
permissions:
  allowed_hosts: []
  allowed_paths: {}
  config: {}               # e.g. {greeting: Hi}
skills:
  - id: [[.Skill]]
    name: Hello
    description: Greets someone by name
    tags: [example]
    function: [[.Skill]]
    examples:                # plugin test runs each; output and error are checked when given
      - '{"name":"world"}'
      - {input: {name: Ada, excited: true}, output: {greeting: "Hello, Ada!"}}
      - {input: {name: "  "}, error: {code: invalid_input, reason: plugin_error}}
    input_schema:
      type: object
      required: [name]
      additionalProperties: false
      properties:
        name: {type: string, minLength: 1, maxLength: 200}
        excited: {type: boolean}
    output_schema:
      type: object
      required: [greeting]
      properties:
        greeting: {type: string}
`
