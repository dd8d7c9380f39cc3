package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillhost/skillhost/host/a2a"
	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/hostfn"
	"github.com/skillhost/skillhost/host/plugin"
	"github.com/skillhost/skillhost/host/sandbox"
)

func newCardCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "card",
		Short: "Print the Agent Card generated from the plugin folder",
		Long: `Card loads every plugin in the plugin folder and prints the host's Agent Card as served at
/.well-known/agent-card.json: the union of the A2A v1.0 and v0.3 shapes. Plugins that fail to load
are reported on stderr and left out of the card.`,
		Args: cobra.NoArgs,
		RunE: runCard,
	}
	d := config.Defaults()
	f := cmd.Flags()
	f.String("config", "", "YAML configuration file")
	f.String("plugins", d.Plugins, "plugin folder to load")
	f.String("data", d.Data, "state directory whose compilation cache is reused when it exists")
	f.String("agent", "", "print this plugin's own card instead of the host card")
	return cmd
}

func runCard(cmd *cobra.Command, _ []string) error {
	file, _ := cmd.Flags().GetString("config")
	cfg, err := config.Load(config.Sources{File: file, Flags: cmd.Flags()})
	if err != nil {
		return usageError{err}
	}
	ctx := cmd.Context()
	// The compilation cache of `serve` makes this fast once the host has run;
	// otherwise the plugin tools' cache. card creates no state directory.
	cache := cacheDir()
	if fi, err := os.Stat(cfg.Data); err == nil && fi.IsDir() {
		cache = filepath.Join(cfg.Data, "wazero-cache")
	}
	rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{CacheDir: cache})
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	defer func() { _ = rt.Close(ctx) }()
	quiet := slog.New(slog.DiscardHandler) // load problems are printed below, once
	reg := plugin.NewRegistry(rt, plugin.RegistryOptions{
		Policy:        cfg.Policy,
		HostFunctions: hostfn.ForPlugins(hostfn.Deps{Logger: quiet}),
		Logger:        quiet,
	})
	defer func() { _ = reg.Close(ctx) }()
	if err := reg.LoadDir(ctx, cfg.Plugins); err != nil {
		if _, statErr := os.Stat(cfg.Plugins); statErr != nil {
			return fmt.Errorf("plugin folder: %w", statErr)
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(os.Stderr, "skillhost: warning: %s\n", line)
		}
	}
	base := cfg.PublicURL
	if base == "" && cfg.Listen != "" {
		base = "http://" + cfg.Listen
	}
	cards := a2a.NewCardService(a2a.CardConfig{BaseURL: base, Version: version, Stdio: cfg.Stdio},
		reg.Snapshot, a2a.CardServiceOptions{Logger: quiet})
	var body []byte
	if agent, _ := cmd.Flags().GetString("agent"); agent != "" {
		body, _, err = cards.AgentCard(ctx, agent)
	} else {
		body, _, err = cards.Card(ctx)
	}
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "Agent not found: "))
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), string(body))
	return err
}
