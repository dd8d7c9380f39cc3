package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/client"
)

// maxTaskInput bounds a task read from a file or stdin.
const maxTaskInput = 16 << 20

func newVerifyTaskCmd() *cobra.Command {
	var to target
	var id, jwksFile string
	var pubs []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify-task [FILE|-] | --id ID [--url URL]",
		Short: "Verify an A2A task's signed provenance chain and name the link that fails",
		Long: `verify-task checks every link of a task's provenance chain (docs/guides/signing.md): order, hash links,
signatures, transitions, the task's state, its artifacts and the facts of its first link. The task is
read from FILE (or stdin: no argument or -) as its v1.0 JSON, a GetTask JSON-RPC response or a
SendMessage result; or fetched with --id from the host at --url (GetTask, with --api-key).

Keys: --pub FILE (repeatable: the host's public key files, pinned), else --jwks FILE, else the JWKS the
host at --url serves (/.well-known/jwks.json), which proves only that the host signed its own task.
Exit status: 0 valid, 1 invalid or unreadable, 2 usage.`,
		Example: "  skillhost verify-task task.json --pub host.key.pub\n  skillhost verify-task --id 3f2c… --url https://agents.example --api-key $KEY",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			to.resolve()
			if id != "" && len(args) == 1 {
				return usagef("give FILE or --id, not both")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
			defer cancel()
			doc, err := readTask(ctx, cmd, args, id, to)
			if err != nil {
				return err
			}
			keys := host.VerifyKeys{PubFiles: pubs}
			switch {
			case len(pubs) > 0:
			case jwksFile != "":
				if keys.JWKS, err = os.ReadFile(jwksFile); err != nil {
					return err
				}
			default:
				base := strings.TrimSuffix(strings.TrimRight(to.url, "/"), "/rpc")
				hc, err := to.httpClient()
				if err != nil {
					return err
				}
				if keys.JWKS, err = client.Get(ctx, hc, base+"/.well-known/jwks.json"); err != nil {
					return fmt.Errorf("reading the host's JWKS (or give --pub / --jwks): %w", plainHTTP(err))
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "skillhost: note: keys from %s itself; pin them with --pub to trust them\n", base)
			}
			v, err := host.VerifyTask(doc, keys)
			if err != nil {
				return err
			}
			if asJSON {
				printJSON(cmd.OutOrStdout(), v)
			} else if v.Valid {
				fmt.Fprintf(cmd.OutOrStdout(), "valid: task %s, %d links, head %s, signed by %s\n", v.TaskID, v.Links, v.Head, strings.Join(v.Signers, ", "))
			}
			if !v.Valid {
				return errors.New("invalid: " + strings.TrimPrefix(v.Message(), "provenance: "))
			}
			return nil
		},
	}
	to.flags(cmd)
	cmd.Flags().StringVar(&id, "id", "", "fetch this task from the host at --url (GetTask)")
	cmd.Flags().StringArrayVar(&pubs, "pub", nil, "the host's public key file (keygen's FILE.pub); repeat for several")
	cmd.Flags().StringVar(&jwksFile, "jwks", "", "a JWKS file with the host's keys")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the verification as JSON")
	return cmd
}

// readTask reads the task from the file or stdin, or fetches it by id.
func readTask(ctx context.Context, cmd *cobra.Command, args []string, id string, to target) ([]byte, error) {
	if id != "" {
		endpoint, err := client.Endpoint(to.url)
		if err != nil {
			return nil, usagef("--url %v", err)
		}
		hc, err := to.httpClient()
		if err != nil {
			return nil, err
		}
		var task json.RawMessage
		err = client.Call(ctx, client.HTTP(endpoint, hc, client.WithAPIKey(to.apiKey)), "GetTask", map[string]any{"id": id}, &task)
		if err != nil {
			return nil, fmt.Errorf("GetTask %s: %w", id, plainHTTP(err))
		}
		return task, nil
	}
	var r io.Reader = cmd.InOrStdin()
	if len(args) == 1 && args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	doc, err := io.ReadAll(io.LimitReader(r, maxTaskInput+1))
	if err != nil {
		return nil, err
	}
	if len(doc) > maxTaskInput {
		return nil, fmt.Errorf("the task is larger than %d bytes", maxTaskInput)
	}
	return doc, nil
}
