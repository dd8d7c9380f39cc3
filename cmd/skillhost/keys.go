package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skillhost/skillhost/host/devkit"
)

func newKeygenCmd() *cobra.Command {
	var out, alg string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "keygen --out FILE [--alg ed25519|ml-dsa-65]",
		Short: "Create a signing key: FILE (private, 0600) and FILE.pub",
		Long: `Keygen creates a signing key for a host (identity.key_file: it signs the Agent Card, task
transitions and artifacts) or for a plugin publisher (plugin sign --key; trust.publishers names the
.pub file).

FILE is the private key, PEM PKCS #8 ("PRIVATE KEY"), written with mode 0600; FILE.pub is the public
key, PEM SubjectPublicKeyInfo ("PUBLIC KEY"). Ed25519 keys follow RFC 8410, ML-DSA-65 keys RFC 9881
(the 32-byte seed form); OpenSSL 3.5 reads both. The printed kid is the key's RFC 7638 JWK
thumbprint: signatures and the JWKS name the key by it. Existing files are never overwritten.`,
		Example: "  skillhost keygen --out host.key\n  skillhost keygen --out host-pq.key --alg ml-dsa-65",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usagef("--out FILE is required")
			}
			k, err := devkit.Keygen(out, alg)
			if errors.Is(err, devkit.ErrInvalidAlg) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			if asJSON {
				printJSON(cmd.OutOrStdout(), k)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "private key: %s (%s, mode 0600)\npublic key:  %s\nkid:         %s\n", k.Private, k.Alg, k.Public, k.KeyID)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "private key file to create; the public key goes to FILE.pub")
	cmd.Flags().StringVar(&alg, "alg", devkit.KeyAlgs[0], "algorithm: "+strings.Join(devkit.KeyAlgs, ", "))
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func newPluginSignCmd() *cobra.Command {
	var keys []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sign DIR --key FILE",
		Short: "Sign a plugin folder: its plugin.yaml together with its module's SHA-256 (writes DIR/plugin.sig)",
		Long: `Sign writes DIR/` + devkit.SignatureFile + `: a JWS (general JSON serialization, RFC 7515) whose payload is
{"type":"skillhost-plugin/v1", name, version, manifest_sha256, wasm, wasm_sha256}: the SHA-256 of
plugin.yaml's bytes and of the module. Repeat --key for one signature per key (an Ed25519 and an
ML-DSA-65 key: hybrid). Any later change to plugin.yaml or the module breaks the signature; a host
then refuses the plugin. Sign after the last build.`,
		Example: "  skillhost keygen --out alice.key\n  skillhost plugin sign plugins/text-tools --key alice.key",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(keys) == 0 {
				return usagef("--key FILE is required")
			}
			s, err := devkit.Sign(args[0], keys)
			if err != nil {
				return err
			}
			if asJSON {
				printJSON(cmd.OutOrStdout(), s)
				return nil
			}
			printSignature(cmd.OutOrStdout(), "signed", s)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&keys, "key", nil, "private key file (skillhost keygen); repeat for several signatures")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func newPluginVerifyCmd() *cobra.Command {
	var pubs []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify DIR [--pub FILE]",
		Short: "Check DIR/plugin.sig against the folder and, with --pub, against trusted publisher keys",
		Long: `Verify checks DIR/` + devkit.SignatureFile + ` as a host does at load. With --pub (repeatable), at least one
signature must be by one of those keys, as under trust.require_signatures. Without --pub, each
signature is checked against the public key it carries: that proves the folder is unchanged since
it was signed, not who signed it. Exit status 1 when the folder is unsigned, changed, or not signed
by a given key.`,
		Example: "  skillhost plugin verify plugins/text-tools --pub alice.key.pub",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := devkit.Verify(args[0], pubs)
			if err != nil {
				return err
			}
			if asJSON {
				printJSON(cmd.OutOrStdout(), s)
				return nil
			}
			printSignature(cmd.OutOrStdout(), "verified", s)
			if len(pubs) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "note: no --pub given: the signer keys were not checked against a trust list")
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&pubs, "pub", nil, "trusted publisher public key file; repeat for several")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func printSignature(w io.Writer, verb string, s devkit.Signature) {
	fmt.Fprintf(w, "%s %s %s (%s)\n", verb, s.Name, s.Version, s.File)
	fmt.Fprintf(w, "  plugin.yaml sha256 %s\n  %s sha256 %s\n", s.ManifestSHA256, s.Wasm, s.WasmSHA256)
	for _, sg := range s.Signers {
		who := ""
		if sg.Publisher != "" {
			who = " publisher " + sg.Publisher
		} else if verb == "verified" {
			who = " (untrusted)"
		}
		fmt.Fprintf(w, "  signer %s %s%s\n", sg.Alg, sg.KeyID, who)
	}
}
