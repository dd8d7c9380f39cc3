package bench

import (
	"fmt"
	"slices"
)

// Row is one line of the benchmark table: a goal (or one criterion of a
// goal), what it was compared with, and the ratio measured side by side.
type Row struct {
	ID       string // "P1"
	Metric   string // "throughput", "p99 latency", …
	Target   string // "≥ 0.50×"
	Baseline string // what the ratio divides by, with its median value
	Subject  string // skillhost's median value
	Ratio    Spread // per-round ratios
	Pass     bool
	Err      error    // the goal could not be measured
	Notes    []string // how it was measured, checks, why it misses
	Profile  string   // for a missed throughput goal: where skillhost's CPU goes
}

// Spread summarises per-round ratios: the median is the result, the range
// shows how much the shared machine moved it.
type Spread struct {
	Median, Min, Max float64
	N                int
}

// SpreadOf summarises values.
func SpreadOf(values []float64) Spread {
	if len(values) == 0 {
		return Spread{}
	}
	v := slices.Clone(values)
	slices.Sort(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Spread{Median: med, Min: v[0], Max: v[len(v)-1], N: len(v)}
}

// median is the median of values (0 for none).
func median(values []float64) float64 { return SpreadOf(values).Median }

func (s Spread) String() string {
	if s.N == 0 {
		return "–"
	}
	if s.N == 1 {
		return fmt.Sprintf("%.2f×", s.Median)
	}
	return fmt.Sprintf("%.2f× (%.2f–%.2f, n=%d)", s.Median, s.Min, s.Max, s.N)
}

// atLeast and atMost build a row's verdict and target text.
func atLeast(r *Row, goal float64) {
	r.Target = fmt.Sprintf("≥ %.2f×", goal)
	r.Pass = r.Err == nil && r.Ratio.N > 0 && r.Ratio.Median >= goal
}

func atMost(r *Row, goal float64) {
	r.Target = fmt.Sprintf("≤ %.2f×", goal)
	r.Pass = r.Err == nil && r.Ratio.N > 0 && r.Ratio.Median <= goal
}

// failed is a row for a goal that could not be measured.
func failed(id, metric string, err error) Row {
	return Row{ID: id, Metric: metric, Err: err}
}
