package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/skillhost/skillhost/host"
)

// newPluginPublishCmd is `skillhost plugin publish DIR --nats URL`.
func newPluginPublishCmd() *cobra.Command {
	var natsURL string
	cmd := &cobra.Command{
		Use:   "publish DIR --nats URL",
		Short: "Publish a plugin folder to a cluster: every host connected to it loads the plugin",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if natsURL == "" {
				return usagef("publish: --nats URL is required")
			}
			name, err := host.PublishPlugin(cmd.Context(), args[0], host.PublishOptions{NATS: natsURL, Logger: cliLogger()})
			if err != nil {
				return fmt.Errorf("publish %s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "published %s\n", name)
			return nil
		},
	}
	cmd.Flags().StringVar(&natsURL, "nats", "", "the cluster's NATS URL(s), comma-separated")
	return cmd
}

// newPluginUnpublishCmd is `skillhost plugin unpublish NAME --nats URL`.
func newPluginUnpublishCmd() *cobra.Command {
	var natsURL string
	cmd := &cobra.Command{
		Use:   "unpublish NAME --nats URL",
		Short: "Delete a published plugin: every host unloads it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if natsURL == "" {
				return usagef("unpublish: --nats URL is required")
			}
			err := host.UnpublishPlugin(cmd.Context(), args[0], host.PublishOptions{NATS: natsURL, Logger: cliLogger()})
			if errors.Is(err, host.ErrNotPublished) {
				return fmt.Errorf("unpublish: %w", err)
			}
			if err != nil {
				return fmt.Errorf("unpublish %s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "unpublished %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&natsURL, "nats", "", "the cluster's NATS URL(s), comma-separated")
	return cmd
}

// cliLogger reports connection trouble (a cluster still starting) on stderr.
func cliLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
