package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/skillhost/skillhost/host/devkit"
)

// newPluginCmd is `skillhost plugin`: the plugin author's tools. The logic
// lives in host/devkit.
func newPluginCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Create, build, inspect, validate and test plugins",
		Long: `Tools for plugin authors. A plugin is a folder with plugin.yaml and its .wasm.

Write your first plugin:
  skillhost plugin new hello              # scaffold ./hello (Go; go.mod points at this checkout's sdk/)
  (cd hello && GOWORK=off go test ./...)  # unit-test the skill logic on the host
  skillhost plugin build hello            # compile hello/hello.wasm (GOOS=wasip1 GOARCH=wasm)
  skillhost plugin test hello             # run every example in the real sandbox
  skillhost serve --plugins .             # serve it`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newPluginNewCmd(), newPluginBuildCmd(), newPluginInspectCmd(), newPluginValidateCmd(), newPluginTestCmd())
	return cmd
}

func newPluginNewCmd() *cobra.Command {
	var dir, sdk string
	cmd := &cobra.Command{
		Use:   "new NAME",
		Short: "Scaffold a Go plugin that builds and passes `plugin test` as is",
		Long: `Scaffold a Go plugin folder: main.go (the wasm export), logic.go and logic_test.go,
plugin.yaml with one skill (<name>_hello, with schemas and examples), go.mod and go.sum.

go.mod replaces ` + devkit.SDKModule + ` with a local path: --sdk, else $` + devkit.SDKEnv + `,
else the sdk/ folder of the skillhost checkout found walking up from the target folder or
the current directory.`,
		Example: "  skillhost plugin new weather\n  skillhost plugin new weather --dir plugins/weather",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := devkit.New(devkit.NewOptions{Name: args[0], Dir: dir, SDKPath: sdk})
			if errors.Is(err, devkit.ErrInvalidName) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "created %s (skill %s, sdk %s)\n", sc.Dir, sc.Skill, sc.SDKPath)
			for _, f := range sc.Files {
				fmt.Fprintf(w, "  %s\n", f)
			}
			rel := sc.Dir
			if wd, err := os.Getwd(); err == nil {
				if r, err := filepath.Rel(wd, sc.Dir); err == nil && filepath.IsLocal(r) {
					rel = r
				}
			}
			fmt.Fprintf(w, "next: skillhost plugin build %s && skillhost plugin test %s\n", rel, rel)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "folder to create (default ./NAME); must not exist or be empty")
	cmd.Flags().StringVar(&sdk, "sdk", "", "path of the skillhost sdk/ folder (default $"+devkit.SDKEnv+" or found by walking up)")
	return cmd
}

func newPluginBuildCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "build DIR",
		Short: "Compile a Go plugin folder to its .wasm and check its exports",
		Long: `Compile the Go plugin in DIR with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath
(GOWORK=off) into the manifest's wasm path, then check that every skill's function is exported
and that only host-provided functions are imported. Steps and elapsed times go to stderr.`,
		Example: "  skillhost plugin build plugins/text",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := devkit.Build(cmd.Context(), args[0], devkit.BuildOptions{Progress: cmd.ErrOrStderr(), Out: out})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "built %s: %s, sha256 %s, %d skills, in %s\n",
				res.Wasm, devkit.FormatBytes(uint64(res.Size)), res.SHA256, len(res.Manifest.Skills), res.Duration.Round(1e8))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the module here instead of the manifest's wasm path")
	return cmd
}

func newPluginInspectCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect DIR|WASM",
		Short: "Show a module's exports, imports, memory, size, hash and effective limits",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := devkit.Inspect(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				printJSON(cmd.OutOrStdout(), in)
				return nil
			}
			return in.WriteText(cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newPluginValidateCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate DIR",
		Short: "Check a plugin folder: manifest, schemas, examples, exports, memory; exit 1 on any problem",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := devkit.Validate(cmd.Context(), args[0], devkit.ValidateOptions{CacheDir: cacheDir()})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				printJSON(w, rep)
			} else {
				for _, p := range rep.Problems {
					fmt.Fprintf(w, "problem: %s\n", p)
				}
				for _, p := range rep.Warnings {
					fmt.Fprintf(w, "warning: %s\n", p)
				}
				for _, n := range rep.Notes {
					fmt.Fprintf(w, "note: %s\n", n)
				}
			}
			if !rep.OK() {
				return fmt.Errorf("validate %s: %d problem(s)", args[0], len(rep.Problems))
			}
			if !asJSON {
				fmt.Fprintf(w, "%s: ok\n", args[0])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func newPluginTestCmd() *cobra.Command {
	var verbose, allowPrivate, network bool
	cmd := &cobra.Command{
		Use:   "test DIR",
		Short: "Run every manifest example in the real sandbox and check what it produces",
		Long: `Load the plugin in the real sandbox (the same registry, limits and host functions as
"skillhost serve", with an embedded state store and one session) and run every example of
every skill in manifest order. An example passes when the call succeeds with an output valid
against the skill's output_schema and equal to its expected output (if it gives one), or when
it fails as its expected error says ({code, reason}). Empty output counts as null, as callers
receive it. Examples marked needs_network are skipped unless --network is given; a skill
without examples is a warning.
Prints PASS/FAIL/SKIP per example with its time and a summary line "N passed, M failed".
With -v, each example's input and output, and the plugin's log lines and progress reports
under it. The plugin gets exactly the network hosts and paths its manifest asks for; limits
are capped by the default operator policy.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := devkit.TestOptions{
				Out: cmd.OutOrStdout(), Verbose: verbose, Network: network, CacheDir: cacheDir(),
				Logger: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn})),
			}
			if allowPrivate {
				opts.AllowPrivate = devkit.PrivateRanges()
			}
			rep, err := devkit.Test(cmd.Context(), args[0], opts)
			if err != nil {
				return err
			}
			if rep.Failed > 0 {
				return fmt.Errorf("test %s: %d of %d examples failed", args[0], rep.Failed, rep.Passed+rep.Failed)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print each input and output, and the plugin's logs and progress")
	cmd.Flags().BoolVar(&network, "network", false, "also run the examples marked needs_network")
	cmd.Flags().BoolVar(&allowPrivate, "allow-private", false, "let http_fetch reach loopback and private addresses (local test servers)")
	return cmd
}

// cacheDir is wazero's compilation cache for the plugin tools ("" = in
// memory when the user cache folder is unknown).
func cacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "skillhost", "wazero")
}
