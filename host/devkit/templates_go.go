package devkit

// scaffoldFile is one file New writes (rendered with [[ ]] delimiters).
type scaffoldFile struct{ name, text string }

var scaffoldFiles = []scaffoldFile{
	{"go.mod", `module [[.Name]]

go [[.GoVersion]]

require (
	github.com/extism/go-pdk [[.PDKVersion]] // indirect
	[[.SDKModule]] v0.0.0
)

// The SDK is used from a skillhost checkout; point this at yours if the
// plugin moves (or set SKILLHOST_SDK when running "skillhost plugin new").
replace [[.SDKModule]] => [[.SDKReplace]]
`},
	{".gitignore", "*.wasm\n"},
	{"plugin.yaml", `name: [[.Name]]
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
  config: {}
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
`},
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

// hello is the skill as a pure function: easy to test with plain go test.
func hello(in HelloIn) (HelloOut, error) {
	name := strings.TrimSpace(in.Name)
	if name == "" {
		return HelloOut{}, sdk.InvalidInput("name is empty")
	}
	end := "."
	if in.Excited {
		end = "!"
	}
	return HelloOut{Greeting: "Hello, " + name + end}, nil
}
`},
	{"logic_test.go", `package main

import (
	"errors"
	"testing"

	"github.com/skillhost/skillhost/sdk"
)

func TestHello(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   HelloIn
		want string
	}{
		{HelloIn{Name: "world"}, "Hello, world."},
		{HelloIn{Name: "  Ada ", Excited: true}, "Hello, Ada!"},
	}
	for _, tt := range tests {
		t.Run(tt.in.Name, func(t *testing.T) {
			t.Parallel()
			got, err := hello(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.Greeting != tt.want {
				t.Errorf("greeting = %q, want %q", got.Greeting, tt.want)
			}
		})
	}
}

func TestHelloRefusesEmptyName(t *testing.T) {
	t.Parallel()
	_, err := hello(HelloIn{Name: "  "})
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
func helloExport() int32 {
	return sdk.Handle(func(ctx *sdk.Context, in HelloIn) (HelloOut, error) {
		ctx.Logf(sdk.LevelDebug, "greeting %q", in.Name)
		return hello(in)
	})
}

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
