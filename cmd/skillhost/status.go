package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func newStatusCmd() *cobra.Command {
	var a adminCmd
	var window time.Duration
	cmd := &cobra.Command{
		Use:   "status [--url URL]",
		Short: "Show the host's health, pools, call rates and recent failures",
		Long: `status reads GET /admin/status (an API key with the scope method:admin or * when the host has keys).
Call rates come from two readings --window apart (0: totals only). The URL defaults to $SKILLHOST_URL,
else ` + defaultURL + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.to.resolve()
			if window < 0 {
				return usagef("--window must not be negative")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), a.timeout+window)
			defer cancel()
			var first statusDoc
			raw, err := a.get(ctx, "status", &first)
			if err != nil {
				return err
			}
			if a.json {
				printJSON(cmd.OutOrStdout(), json.RawMessage(raw))
				return nil
			}
			cur, prev := first, (*statusDoc)(nil)
			if window > 0 {
				select {
				case <-time.After(window):
				case <-ctx.Done():
					return ctx.Err()
				}
				if _, err := a.get(ctx, "status", &cur); err != nil {
					return err
				}
				prev = &first
			}
			printStatus(cmd.OutOrStdout(), a.to.url, cur, prev)
			return nil
		},
	}
	a.flags(cmd)
	cmd.Flags().DurationVar(&window, "window", time.Second, "measure call rates over this long")
	return cmd
}

// statusDoc is the part of GET /admin/status the report shows.
type statusDoc struct {
	Version       string         `json:"version"`
	Time          time.Time      `json:"time"`
	UptimeSeconds int64          `json:"uptime_seconds"`
	Health        string         `json:"health"`
	HealthError   string         `json:"health_error"`
	Revision      uint64         `json:"revision"`
	Plugins       map[string]int `json:"plugins"`
	Pool          struct {
		BudgetBytes   uint64 `json:"budget_bytes"`
		ReservedBytes uint64 `json:"reserved_bytes"`
		CallsRunning  uint64 `json:"calls_running"`
		Instances     struct {
			Live, Idle, Busy, Discarded uint64
		} `json:"instances"`
		CompileCache struct {
			Hits, Misses uint64
		} `json:"compile_cache"`
	} `json:"pool"`
	Skills []struct {
		Plugin  string            `json:"plugin"`
		Skill   string            `json:"skill"`
		Calls   uint64            `json:"calls"`
		Errors  map[string]uint64 `json:"errors"`
		Seconds float64           `json:"seconds"`
	} `json:"skills"`
	Failures struct {
		Total    uint64 `json:"total"`
		Failures []struct {
			Time    time.Time `json:"time"`
			Method  string    `json:"method"`
			Plugin  string    `json:"plugin"`
			Skill   string    `json:"skill"`
			Code    int       `json:"code"`
			Reason  string    `json:"reason"`
			Message string    `json:"message"`
		} `json:"failures"`
	} `json:"recent_failures"`
}

func printStatus(w io.Writer, url string, st statusDoc, prev *statusDoc) {
	health := st.Health
	if st.HealthError != "" {
		health += " (" + st.HealthError + ")"
	}
	fmt.Fprintf(w, "host      %s  version %s  %s  up %s  revision %d\n", url, st.Version, health,
		(time.Duration(st.UptimeSeconds) * time.Second).String(), st.Revision)
	notReady := ""
	if n := st.Plugins["not_ready"]; n > 0 { // loaded, but no instance could start
		notReady = fmt.Sprintf(", %d not ready", n)
	}
	fmt.Fprintf(w, "plugins   %d loaded%s, %d reloading, %d loading, %d failed\n",
		st.Plugins["loaded"], notReady, st.Plugins["reloading"], st.Plugins["loading"], st.Plugins["failed"])
	p := st.Pool
	fmt.Fprintf(w, "pool      %d instances (%d idle, %d busy), %d discarded; %d calls running\n",
		p.Instances.Live, p.Instances.Idle, p.Instances.Busy, p.Instances.Discarded, p.CallsRunning)
	fmt.Fprintf(w, "memory    %s reserved of the %s budget (sandbox.max_live_bytes)\n", mib(p.ReservedBytes), mib(p.BudgetBytes))
	fmt.Fprintf(w, "compiles  %d from the cache, %d compiled\n", p.CompileCache.Hits, p.CompileCache.Misses)

	before := map[string]uint64{}
	var dt float64
	if prev != nil {
		dt = st.Time.Sub(prev.Time).Seconds()
		for _, s := range prev.Skills {
			before[s.Plugin+"/"+s.Skill] = s.Calls
		}
	}
	fmt.Fprintln(w, "\nskills")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  SKILL\tCALLS\tCALLS/S\tERRORS\tAVG LATENCY")
	for _, s := range st.Skills {
		rate := "-"
		if dt > 0 {
			rate = fmt.Sprintf("%.1f", float64(s.Calls-min(before[s.Plugin+"/"+s.Skill], s.Calls))/dt)
		}
		avg := "-"
		if s.Calls > 0 {
			avg = (time.Duration(s.Seconds / float64(s.Calls) * float64(time.Second))).Round(time.Microsecond).String()
		}
		fmt.Fprintf(tw, "  %s/%s\t%d\t%s\t%s\t%s\n", s.Plugin, s.Skill, s.Calls, rate, sortedReasons(s.Errors), avg)
	}
	_ = tw.Flush()

	f := st.Failures
	fmt.Fprintf(w, "\nrecent failures (%d shown, %d since start)\n", len(f.Failures), f.Total)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  TIME\tMETHOD\tSKILL\tCODE\tREASON\tMESSAGE")
	for _, x := range f.Failures {
		skill := "-"
		if x.Skill != "" {
			skill = x.Plugin + "/" + x.Skill
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\n", x.Time.Local().Format("15:04:05"), dash(x.Method), skill, x.Code, x.Reason,
			oneLine(x.Message, 100))
	}
	_ = tw.Flush()
}

// mib renders bytes in MiB (GiB from 10 GiB on).
func mib(n uint64) string {
	if n >= 10<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// oneLine keeps a message on one line, at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
