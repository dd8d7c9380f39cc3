package main

import (
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/skillhost/skillhost/sdk"
)

// ProcessIn is the input of process_data.
type ProcessIn struct {
	Data      []json.Number `json:"data"`
	Operation string        `json:"operation"`
}

// maxItems caps the list length.
const maxItems = 100_000

// operations lists every operation in output order; "all" computes each.
var operations = []string{"sum", "count", "average", "min", "max", "median", "stddev"}

// process computes the requested statistic. The output always carries
// "count"; "sum" and "average" also carry each other (spec 001's example:
// {"data":[1,2,3,4,5],"operation":"sum"} → {"sum":15,"count":5,"average":3}).
// stddev is the population standard deviation.
func process(in ProcessIn) (map[string]float64, error) {
	op := strings.ToLower(strings.TrimSpace(in.Operation))
	if op == "" {
		op = "all"
	}
	if op != "all" && !slices.Contains(operations, op) {
		return nil, sdk.InvalidInput("unknown operation %q; want one of %s or all", in.Operation, strings.Join(operations, ", ")).
			WithData(map[string]any{"field": "operation"})
	}
	if len(in.Data) == 0 {
		return nil, sdk.InvalidInput("data is empty; give at least one number").WithData(map[string]any{"field": "data"})
	}
	if len(in.Data) > maxItems {
		return nil, sdk.InvalidInput("data has %d items; the limit is %d", len(in.Data), maxItems).
			WithData(map[string]any{"field": "data"})
	}
	xs := make([]float64, len(in.Data))
	for i, n := range in.Data {
		f, err := n.Float64()
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, sdk.InvalidInput("data[%d] = %s is not a finite number", i, n.String()).
				WithData(map[string]any{"field": "data", "index": i})
		}
		xs[i] = f
	}
	st := compute(xs)
	out := map[string]float64{"count": st["count"]}
	switch op {
	case "all":
		return st, nil
	case "sum", "average":
		out["sum"], out["average"] = st["sum"], st["average"]
	default:
		out[op] = st[op]
	}
	if math.IsInf(out["sum"], 0) || math.IsInf(out["average"], 0) || math.IsInf(out["stddev"], 0) {
		return nil, sdk.InvalidInput("the result overflows a 64-bit float")
	}
	return out, nil
}

// compute returns every statistic of a non-empty list of finite numbers.
func compute(xs []float64) map[string]float64 {
	n := float64(len(xs))
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	mean := sum / n
	sq := 0.0
	for _, x := range xs {
		sq += (x - mean) * (x - mean)
	}
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	mid := len(sorted) / 2
	median := sorted[mid]
	if len(sorted)%2 == 0 {
		median = (sorted[mid-1] + sorted[mid]) / 2
	}
	return map[string]float64{
		"sum":     sum,
		"count":   n,
		"average": mean,
		"min":     sorted[0],
		"max":     sorted[len(sorted)-1],
		"median":  median,
		"stddev":  math.Sqrt(sq / n),
	}
}
