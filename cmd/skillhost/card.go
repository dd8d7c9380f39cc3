package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/config"
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
	agent, _ := cmd.Flags().GetString("agent")
	body, problems, err := host.Card(ctx, cfg, host.CardOptions{Version: version, Agent: agent, CacheDir: cache})
	for _, line := range problems {
		fmt.Fprintf(os.Stderr, "skillhost: warning: %s\n", line)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), string(body))
	return err
}
