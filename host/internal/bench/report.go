package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Machine describes where the benchmarks ran.
type Machine struct {
	Cores     int
	CPU       string
	OS, Arch  string
	Go        string
	Commit    string
	LoadStart string // /proc/loadavg at the start
	LoadEnd   string // and at the end
}

// Describe reads the machine's description now.
func Describe() Machine {
	m := Machine{Cores: runtime.NumCPU(), CPU: cpuModel(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		Go: runtime.Version(), Commit: "unknown", LoadStart: LoadAverage()}
	if out, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	return m
}

func (m Machine) String() string {
	return fmt.Sprintf("%d cores, %s, %s/%s, %s", m.Cores, m.CPU, m.OS, m.Arch, m.Go)
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// LoadAverage is the 1, 5 and 15 minute load averages ("" off Linux).
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func verdict(r Row) string {
	switch {
	case r.Err != nil:
		return "not measured"
	case r.Pass:
		return "pass"
	default:
		return "**miss**"
	}
}

// Table renders rows for a terminal.
func Table(rows []Row) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "goal\tmetric\ttarget\tratio (median, range)\tresult\tbaseline\tskillhost")
	for _, r := range rows {
		res := strings.Trim(verdict(r), "*")
		if r.Err != nil {
			res += ": " + r.Err.Error()
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Metric, r.Target, r.Ratio, res, r.Baseline, r.Subject)
	}
	_ = w.Flush()
	return b.String()
}

// Report renders BENCHMARKS.md.
func Report(rows []Row, m Machine, started time.Time, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# skillhost benchmarks\n\n")
	fmt.Fprintf(&b, "Written by `make bench` on %s (UTC), in %v, at commit `%s`.\n\n",
		started.UTC().Format("2006-01-02 15:04"), took.Round(time.Second), m.Commit)
	fmt.Fprintf(&b, "Machine: %s. Load average (1, 5, 15 min) %s at the start, %s at the end.\n\n", m, m.LoadStart, m.LoadEnd)
	b.WriteString("Absolute numbers on a shared machine mean little, so every goal is a ratio measured side by side in\n" +
		"the same run: skillhost against a real baseline program (or a fixed limit), in alternating rounds\n" +
		"(A/B, then B/A), each round after a warm-up. The ratio column is the median over the rounds with\n" +
		"its range; the baseline and skillhost columns are medians too. How each goal is measured:\n" +
		"[docs/guides/performance.md](docs/guides/performance.md#how-it-is-measured).\n\n")
	b.WriteString("| Goal | Metric | Target | Ratio (median, range) | Result | Baseline | skillhost |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		res := verdict(r)
		if r.Err != nil {
			res += ": " + strings.ReplaceAll(r.Err.Error(), "|", "\\|")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.ID, r.Metric, r.Target, r.Ratio, res, r.Baseline, r.Subject)
	}
	var notes []string
	for _, r := range rows {
		for _, n := range r.Notes {
			notes = append(notes, fmt.Sprintf("- **%s %s**: %s", r.ID, r.Metric, n))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n## Notes\n\n" + strings.Join(notes, "\n") + "\n")
	}
	for _, r := range rows {
		if r.Profile != "" {
			summary, table, _ := strings.Cut(r.Profile, "\n")
			fmt.Fprintf(&b, "\n## Why %s %s misses\n\n<details><summary>%s</summary>\n\n```\n%s\n```\n</details>\n",
				r.ID, r.Metric, summary, strings.TrimSpace(table))
		}
	}
	return b.String()
}
