package plugin_test

import (
	"fmt"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

func ExampleDecodeManifest() {
	_, err := plugin.DecodeManifest("plugins/text/plugin.yaml", []byte(`
name: text-tools
version: 1.2.0
wasm: text_tools.wasm
limits: {memory: 64MB}
skills:
  - {id: Upper, description: Upper-cases text}
`))
	fmt.Println(err)
	// Output:
	// plugins/text/plugin.yaml: limits.memory: "64MB": must be a byte count or a size like 512KiB, 64MiB, 1GiB
	// plugins/text/plugin.yaml: skills[0].id: must match [a-z0-9][a-z0-9_-]*
}

func ExampleCheck() {
	m, _ := plugin.DecodeManifest("plugins/x/plugin.yaml", []byte(`
name: x
version: 1.0.0
wasm: x.wasm
limits: {memory: 512MiB}
skills: [{id: a, description: d}]
`))
	_, err := plugin.Check(config.DefaultPolicy(), m)
	fmt.Println(err)
	// Output: plugins/x/plugin.yaml: limits.memory: 512MiB exceeds the operator's max 256MiB
}
