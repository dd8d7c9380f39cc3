package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/skillhost/skillhost/host/client"
	"github.com/skillhost/skillhost/host/fault"
)

// adminCmd is what `plugins` and `status` share: the target host, --json,
// and the request timeout.
type adminCmd struct {
	to      target
	json    bool
	timeout time.Duration
}

func (a *adminCmd) flags(cmd *cobra.Command) {
	a.to.flags(cmd)
	cmd.Flags().BoolVar(&a.json, "json", false, "print the host's JSON document as is")
	cmd.Flags().DurationVar(&a.timeout, "timeout", 30*time.Second, "give up after this long")
}

// get reads GET /admin/<doc> from the host into v (and returns the raw
// bytes).
func (a *adminCmd) get(ctx context.Context, doc string, v any) ([]byte, error) {
	u, err := url.Parse(a.to.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("--url %q is not an http(s) URL", a.to.url)
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/rpc") + "/admin/" + doc
	u.RawQuery, u.Fragment = "", ""
	hc, err := a.to.httpClient()
	if err != nil {
		return nil, err
	}
	body, err := client.Get(ctx, hc, u.String(), client.WithAPIKey(a.to.apiKey))
	var fe *fault.Error
	if errors.As(err, &fe) { // refused: 401, 403, 429
		return nil, fmt.Errorf("GET %s: %d %s (reason %s)", u, fe.Kind.Code(), fe.Message(), fe.Reason)
	}
	if err != nil {
		return nil, plainHTTP(err)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			return nil, fmt.Errorf("GET %s: the reply is not an admin document: %w", u, err)
		}
	}
	return body, nil
}

func newPluginsCmd() *cobra.Command {
	var a adminCmd
	cmd := &cobra.Command{
		Use:   "plugins [--url URL]",
		Short: "List the host's plugins: skills, versions, limits, state and load problems",
		Long: `plugins reads GET /admin/plugins (an API key with the scope method:admin or * when the host has keys).
The URL defaults to $SKILLHOST_URL, else ` + defaultURL + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.to.resolve()
			ctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
			defer cancel()
			var doc pluginsDoc
			raw, err := a.get(ctx, "plugins", &doc)
			if err != nil {
				return err
			}
			if a.json {
				printJSON(cmd.OutOrStdout(), json.RawMessage(raw))
				return nil
			}
			printPlugins(cmd.OutOrStdout(), doc)
			return nil
		},
	}
	a.flags(cmd)
	return cmd
}

// pluginsDoc is the part of GET /admin/plugins the table shows.
type pluginsDoc struct {
	Revision uint64 `json:"revision"`
	Plugins  []struct {
		Name     string  `json:"name"`
		Version  string  `json:"version"`
		State    string  `json:"state"`
		Error    string  `json:"error"`
		Source   string  `json:"source"`
		Dir      string  `json:"dir"`
		Revision uint64  `json:"revision"`
		Digest   string  `json:"digest"`
		Signer   *string `json:"signer"`
		Limits   *struct {
			Timeout     string `json:"timeout"`
			Memory      string `json:"memory"`
			Output      string `json:"output"`
			Concurrency int    `json:"concurrency"`
		} `json:"limits"`
		Skills []struct {
			ID string `json:"id"`
		} `json:"skills"`
		OCI *struct {
			Ref    string `json:"ref"`
			Digest string `json:"digest"`
		} `json:"oci"`
		Settings *struct {
			Config  []string          `json:"config"`
			Secrets map[string]string `json:"secrets"`
		} `json:"settings"`
	} `json:"plugins"`
}

func printPlugins(w io.Writer, doc pluginsDoc) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tSTATE\tSOURCE\tSKILLS\tTIMEOUT\tMEMORY\tOUTPUT\tCONCURRENCY\tREVISION\tDIGEST\tSIGNER")
	var problems, pulled, settings []string
	for _, p := range doc.Plugins {
		if p.OCI != nil {
			pulled = append(pulled, fmt.Sprintf("  %s  %s  %s", p.Name, p.OCI.Ref, dash(p.OCI.Digest)))
		}
		if s := p.Settings; s != nil {
			secrets := make([]string, 0, len(s.Secrets))
			for k, v := range s.Secrets {
				secrets = append(secrets, k+"="+v)
			}
			sort.Strings(secrets)
			settings = append(settings, fmt.Sprintf("  %s  config: %s  secrets: %s", p.Name,
				dash(strings.Join(s.Config, ",")), dash(strings.Join(secrets, ","))))
		}
		skills := make([]string, 0, len(p.Skills))
		for _, s := range p.Skills {
			skills = append(skills, s.ID)
		}
		timeout, memory, output, conc := "-", "-", "-", "-"
		if l := p.Limits; l != nil {
			timeout, memory, output, conc = l.Timeout, l.Memory, l.Output, fmt.Sprint(l.Concurrency)
		}
		rev, digest := "-", "-"
		if p.Revision != 0 {
			rev = fmt.Sprint(p.Revision)
		}
		if d := strings.TrimPrefix(p.Digest, "sha256:"); len(d) >= 12 {
			digest = "sha256:" + d[:12]
		}
		signer := "-"
		if p.Signer != nil {
			signer = *p.Signer
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, dash(p.Version), p.State, p.Source,
			dash(strings.Join(skills, ",")), timeout, memory, output, conc, rev, digest, signer)
		if p.Error != "" {
			what := "not loaded"
			if p.State != "failed" {
				what = "newest revision refused; the loaded one keeps serving"
			}
			problems = append(problems, fmt.Sprintf("  %s (%s): %s\n    %s", p.Name, p.Dir, what,
				strings.ReplaceAll(p.Error, "\n", "\n    ")))
		}
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\n%d plugin folder(s), registry revision %d\n", len(doc.Plugins), doc.Revision)
	if len(pulled) > 0 {
		fmt.Fprintf(w, "\nfrom OCI registries (sources.oci):\n%s\n", strings.Join(pulled, "\n"))
	}
	if len(settings) > 0 {
		fmt.Fprintf(w, "\noperator settings (plugins.<name>; values are never shown):\n%s\n", strings.Join(settings, "\n"))
	}
	if len(problems) > 0 {
		fmt.Fprintf(w, "\nproblems:\n%s\n", strings.Join(problems, "\n"))
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// sortedReasons renders errors by reason as "trap 2, timeout 1".
func sortedReasons(errs map[string]uint64) string {
	type rc struct {
		reason string
		n      uint64
	}
	var list []rc
	for r, n := range errs {
		list = append(list, rc{r, n})
	}
	sort.Slice(list, func(i, j int) bool {
		return list[i].n > list[j].n || list[i].n == list[j].n && list[i].reason < list[j].reason
	})
	parts := make([]string, 0, len(list))
	for _, e := range list {
		parts = append(parts, fmt.Sprintf("%s %d", e.reason, e.n))
	}
	return dash(strings.Join(parts, ", "))
}
