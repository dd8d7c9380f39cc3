package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/config"
)

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the plugin folder over HTTP (JSON-RPC, A2A) and/or stdio",
		Long: `Serve loads every plugin in the plugin folder, watches it for changes, and serves the skills.

Configuration layers: defaults < --config FILE < SKILLHOST_* environment < flags.
--stdio serves the stdio transport (local mode); with --listen too it serves both (hybrid mode).
--mcp-stdio serves MCP on stdin/stdout instead, for a local MCP client (e.g. a desktop app).`,
		Args: cobra.NoArgs,
		RunE: runServe,
	}
	d := config.Defaults()
	f := cmd.Flags()
	f.String("config", "", "YAML configuration file")
	f.String("listen", d.Listen, "HTTP listen address (empty: no HTTP)")
	f.String("plugins", d.Plugins, "plugin folder to load and watch")
	f.String("data", d.Data, "state directory (embedded NATS JetStream, compile cache)")
	f.Bool("stdio", d.Stdio, "serve the stdio transport on stdin/stdout")
	f.Bool("mcp-stdio", d.MCPStdio, "serve MCP (Model Context Protocol) on stdin/stdout, for a local client")
	f.String("nats", d.NATS, "NATS URL(s), comma-separated; empty embeds a server")
	return cmd
}

func runServe(cmd *cobra.Command, _ []string) error {
	file, _ := cmd.Flags().GetString("config")
	flags := cmd.Flags()
	cfg, err := config.Load(config.Sources{File: file, Flags: flags})
	if err != nil {
		return usageError{err}
	}
	// --stdio (or --mcp-stdio) alone means local mode: no HTTP unless a
	// listen address is configured explicitly (--listen, SKILLHOST_LISTEN or
	// the file).
	local := (flags.Changed("stdio") && cfg.Stdio) || flags.Changed("mcp-stdio") && cfg.MCPStdio
	if local && !flags.Changed("listen") && !listenConfigured(file) {
		cfg.Listen = ""
	}
	if err := pluginFolderExists(cfg.Plugins); err != nil {
		return err
	}
	logger := newLogger(cfg.Log)
	slog.SetDefault(logger)
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := host.New(ctx, cfg, host.WithVersion(version), host.WithLogger(logger))
	if err != nil {
		return err
	}
	if err := h.Serve(ctx); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// pluginFolderExists refuses a plugin folder that is missing or not a
// folder (a mistyped --plugins would otherwise serve a healthy host with no
// skills). A new, empty folder is made on purpose: mkdir, then serve.
func pluginFolderExists(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usagef("--plugins %s: no such folder (create it first, e.g. mkdir -p %s, to start with no plugins)", dir, dir)
	case err != nil:
		return usagef("--plugins %s: %v", dir, err)
	case !fi.IsDir():
		return usagef("--plugins %s: not a folder", dir)
	}
	return nil
}

// newLogger writes to stderr (stdout belongs to the stdio transport).
func newLogger(c config.Log) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(strings.ToUpper(c.Level)))
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

// listenConfigured reports whether the environment or the config file sets
// the listen address.
func listenConfigured(file string) bool {
	if _, ok := os.LookupEnv(config.EnvPrefix + "LISTEN"); ok {
		return true
	}
	if file == "" {
		return false
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	var top map[string]any
	if yaml.Unmarshal(data, &top) != nil {
		return false
	}
	_, ok := top["listen"]
	return ok
}
