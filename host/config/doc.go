// Package config loads the host configuration in layers with koanf:
// defaults < YAML file < SKILLHOST_* environment < command-line flags.
//
//	cfg, err := config.Load(config.Sources{File: "skillhost.yaml", Flags: cmd.Flags()})
//
// Environment variables name a key with its path upper-cased, "__" between
// levels: SKILLHOST_LISTEN=:9090, SKILLHOST_POLICY__MAX_TIMEOUT=10s. Lists are
// comma-separated. Validation happens once, in Load; a bad value is an error
// naming the key.
package config
