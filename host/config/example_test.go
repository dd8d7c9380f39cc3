package config_test

import (
	"fmt"

	"github.com/skillhost/skillhost/host/config"
)

// Loading: defaults, then a file, the environment and flags (here only the
// environment), validated once.
func ExampleLoad() {
	cfg, err := config.Load(config.Sources{Environ: []string{
		"SKILLHOST_LISTEN=127.0.0.1:9090",
		"SKILLHOST_POLICY__MAX_MEMORY=128MiB",
		"SKILLHOST_NET__ALLOW_PRIVATE=10.0.0.0/8, 127.0.0.1",
	}})
	fmt.Println(cfg.Listen, cfg.Policy.MaxMemory, cfg.Net.AllowPrivate, err)

	_, err = config.Load(config.Sources{Environ: []string{"SKILLHOST_RPC__MAX_BATCH=0"}})
	fmt.Println(err)
	// Output:
	// 127.0.0.1:9090 128MiB [10.0.0.0/8 127.0.0.1] <nil>
	// config rpc.max_batch: must be greater than zero
}

// Sizes are written with binary units, in files, the environment and
// plugin manifests alike.
func ExampleParseByteSize() {
	b, err := config.ParseByteSize("1.5MiB")
	fmt.Println(uint64(b), b, err)
	_, err = config.ParseByteSize("64MB")
	fmt.Println(err)
	// Output:
	// 1572864 1536KiB <nil>
	// "64MB": must be a byte count or a size like 512KiB, 64MiB, 1GiB
}

// Embedding: start from the defaults and change what differs.
func ExampleDefaults() {
	cfg := config.Defaults()
	cfg.Listen = "127.0.0.1:0"
	cfg.Policy.MaxTimeout *= 2
	cfg.RPC.MaxBatchResponse = 4 * config.MiB
	fmt.Println(cfg.Validate(), cfg.Policy.MaxTimeout, cfg.RPC.MaxBatchResponse)
	// Output: <nil> 1m0s 4MiB
}
