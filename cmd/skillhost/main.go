// Command skillhost hosts sandboxed WebAssembly skills and serves them over
// JSON-RPC and A2A. This package only wires flags to the host library.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// usageError marks errors in how the command was called (exit code 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// usagef returns a usage error.
func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "skillhost",
		Short:         "Host sandboxed WebAssembly skills and serve them over A2A / JSON-RPC",
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newServeCmd(), newCallCmd(), newVersionCmd(), newPluginCmd(), newCardCmd(), newPluginsCmd(), newStatusCmd(), newKeygenCmd(),
		newVerifyTaskCmd())
	for _, c := range root.Commands() {
		wrapArgs(c)
	}
	return root
}

// wrapArgs makes argument-count errors usage errors, recursively.
func wrapArgs(c *cobra.Command) {
	if c.Args != nil {
		args := c.Args
		c.Args = func(cmd *cobra.Command, a []string) error {
			if err := args(cmd, a); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

// exitCode maps an error to the documented exit codes: 0 ok, 1 runtime
// failure, 2 usage error.
func exitCode(err error) int {
	var u usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &u), isUnknownCommand(err):
		return 2
	default:
		return 1
	}
}

func main() {
	err := newRootCmd().Execute()
	if err != nil {
		var u usageError
		if errors.As(err, &u) && !isUnknownCommand(err) && !strings.Contains(err.Error(), "docs/reference/") {
			fmt.Fprintf(os.Stderr, "skillhost: %v (see --help)\n", err)
		} else {
			fmt.Fprintf(os.Stderr, "skillhost: %v\n", err)
		}
	}
	os.Exit(exitCode(err))
}

// isUnknownCommand recognises cobra's error for an unknown subcommand,
// which it creates without a type.
func isUnknownCommand(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "unknown command ")
}
