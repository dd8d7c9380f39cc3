package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillhost/skillhost/host"
)

// ociFlags are what `plugin push` and `plugin pull` share: how the
// registry is reached.
type ociFlags struct {
	plainHTTP     bool
	username      string
	passwordStdin bool
}

func (f *ociFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.plainHTTP, "plain-http", false, "talk to the registry over plain HTTP (a local registry)")
	cmd.Flags().StringVar(&f.username, "username", "", "registry user name (with --password-stdin); default: the docker config file's credentials")
	cmd.Flags().BoolVar(&f.passwordStdin, "password-stdin", false, "read the registry password (or token) from standard input")
}

// options reads the password from stdin when asked.
func (f *ociFlags) options(cmd *cobra.Command) (host.OCIOptions, error) {
	o := host.OCIOptions{PlainHTTP: f.plainHTTP, Username: f.username}
	if f.passwordStdin != (f.username != "") {
		return o, usagef("--username and --password-stdin go together")
	}
	if f.passwordStdin {
		b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 64<<10))
		if err != nil {
			return o, fmt.Errorf("reading the password from stdin: %w", err)
		}
		o.Password = strings.TrimRight(string(b), "\r\n")
		if o.Password == "" {
			return o, usagef("--password-stdin: standard input is empty")
		}
	}
	return o, nil
}

const ociAuthHelp = `Credentials: --username with --password-stdin, else those of the docker config file
($DOCKER_CONFIG/config.json, else ~/.docker/config.json, as docker login writes it, credential
helpers included), else anonymous.`

// newPluginPushCmd is `skillhost plugin push DIR REF`.
func newPluginPushCmd() *cobra.Command {
	var f ociFlags
	cmd := &cobra.Command{
		Use:   "push DIR REF",
		Short: "Push a plugin folder to an OCI registry (registry/repository[:tag], default tag latest)",
		Long: `push validates the plugin folder DIR as a host would load it and pushes plugin.yaml, its module
and its signature files (plugin.sig, *.jws) to REF as an OCI artifact of type
application/vnd.skillhost.plugin.v1+json, one layer per file. The same folder always gives the
same digest; hosts pin it with REF@DIGEST (config sources.oci) or follow the tag (poll).
` + ociAuthHelp,
		Example: "  skillhost plugin push plugins/text ghcr.io/acme/text:1.2.0\n" +
			"  skillhost plugin push plugins/text 127.0.0.1:5000/text:dev --plain-http",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := f.options(cmd)
			if err != nil {
				return err
			}
			res, err := host.PushPlugin(cmd.Context(), args[0], args[1], o)
			if err != nil {
				return fmt.Errorf("push %s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pushed %s %s to %s\ndigest %s (pin it: %s@%s)\n", res.Name, res.Version, res.Ref,
				res.Digest, repository(res.Ref), res.Digest)
			return nil
		},
	}
	f.add(cmd)
	return cmd
}

// newPluginPullCmd is `skillhost plugin pull REF DIR`.
func newPluginPullCmd() *cobra.Command {
	var f ociFlags
	cmd := &cobra.Command{
		Use:   "pull REF DIR",
		Short: "Pull a plugin from an OCI registry into a new folder",
		Long: `pull fetches the plugin artifact REF (registry/repository:tag or @sha256:<digest>) into DIR,
which must not exist or be empty. Anything that is not a skillhost plugin within the caps of a
plugin folder is refused; every digest is verified; files are written into a temporary folder
renamed into place. Run plugin validate (or verify, for a signed plugin) on the result.
` + ociAuthHelp,
		Example: "  skillhost plugin pull ghcr.io/acme/text:1.2.0 plugins/text",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := f.options(cmd)
			if err != nil {
				return err
			}
			res, err := host.PullPlugin(cmd.Context(), args[0], args[1], o)
			if err != nil {
				return err // names the reference
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pulled %s %s from %s (%s) into %s\n", res.Name, res.Version, res.Ref, res.Digest, args[1])
			return nil
		},
	}
	f.add(cmd)
	return cmd
}

// repository is a reference without its tag.
func repository(ref string) string {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i]
	}
	return ref
}
