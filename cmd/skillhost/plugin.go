package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillhost/skillhost/host/devkit"
	"github.com/skillhost/skillhost/sdk"
)

// newPluginCmd is `skillhost plugin`: the plugin author's tools. The logic
// lives in host/devkit.
func newPluginCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Create, build, inspect, validate and test plugins",
		Long: `Tools for plugin authors. A plugin is a folder with plugin.yaml and its .wasm.

Write your first plugin (needs only this binary and Go):
  skillhost plugin new hello              # scaffold ./hello (Go, with a copy of the SDK in hello/sdk)
  (cd hello && go test ./...)             # unit-test the skill on this machine (package sdktest)
  skillhost plugin build hello            # compile hello/hello.wasm (GOOS=wasip1 GOARCH=wasm)
  skillhost plugin test hello             # run every example in the real sandbox
  skillhost serve --plugins .             # serve it

In another language: plugin new NAME --lang assemblyscript (npm) or --lang wat (wabt).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newPluginNewCmd(), newPluginBuildCmd(), newPluginInspectCmd(), newPluginValidateCmd(), newPluginTestCmd(),
		newPluginPublishCmd(), newPluginUnpublishCmd(), newPluginSignCmd(), newPluginVerifyCmd(), newPluginPushCmd(), newPluginPullCmd())
	return cmd
}

func newPluginNewCmd() *cobra.Command {
	var dir, sdkDir, lang string
	cmd := &cobra.Command{
		Use:   "new NAME",
		Short: "Scaffold a plugin (Go, AssemblyScript or WAT) that builds and passes `plugin test` as is",
		Long: `Scaffold a plugin folder with plugin.yaml (one skill <name>_hello, with schemas and examples
that check an output and an error) and the skill's source:

  --lang go (default)    main.go, logic.go, logic_test.go (with sdktest), go.mod, go.sum and sdk/,
                         a copy of the skillhost SDK this binary carries; go.mod replaces
                         ` + devkit.SDKModule + ` with ./sdk, so the folder builds anywhere with Go.
                         Inside a skillhost checkout (or with --sdk DIR) it uses that SDK folder instead.
  --lang assemblyscript  package.json (@extism/as-pdk, AssemblyScript), assembly/index.ts and
                         assembly/skillhost.ts (the skillhost host functions); built with npm.
  --lang wat             NAME.wat: a module written by hand, the smallest plugin; built with wabt's wat2wasm.`,
		Example: "  skillhost plugin new weather\n  skillhost plugin new weather --dir plugins/weather\n" +
			"  skillhost plugin new weather --lang assemblyscript",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := devkit.New(devkit.NewOptions{Name: args[0], Lang: lang, Dir: dir, SDK: sdk.Source, SDKPath: sdkDir, Version: version})
			if errors.Is(err, devkit.ErrInvalidName) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "created %s (%s, skill %s)\n", sc.Dir, sc.Lang, sc.Skill)
			if sc.SDK != "" {
				fmt.Fprintf(w, "sdk: %s\n", sc.SDK)
			}
			for _, f := range sc.Files {
				fmt.Fprintf(w, "  %s\n", f)
			}
			fmt.Fprintf(w, "next: %s\n", strings.Join(sc.Next, " && "))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "folder to create (default ./NAME); must not exist or be empty")
	cmd.Flags().StringVar(&lang, "lang", devkit.LangGo, "language: "+strings.Join(devkit.Langs, ", "))
	cmd.Flags().StringVar(&sdkDir, "sdk", "", "Go: use this SDK folder (holding the SDK's go.mod) instead of a copy")
	return cmd
}

func newPluginBuildCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "build DIR",
		Short: "Compile a plugin folder (Go, AssemblyScript/npm or WAT) to its .wasm and check it",
		Long: `Compile the plugin in DIR into the manifest's wasm path (or --out), recognising its language:

  *.go, go.mod  go build -buildmode=c-shared -trimpath with GOOS=wasip1 GOARCH=wasm (GOWORK=off)
  package.json  npm install (when node_modules is missing), then npm run build (AssemblyScript)
  *.wat         wat2wasm (from wabt)

then check that every skill's function is exported and that only host-provided functions are
imported. Steps and elapsed times go to stderr. Any other folder (Rust, …): build the module with
your toolchain, then run plugin validate.`,
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
