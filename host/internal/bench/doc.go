// Package bench is the benchmark harness behind `make bench`: a closed-loop
// HTTP load generator that only talks to loopback addresses (Run), the
// baseline servers the goals compare skillhost with (FiberEcho, A2ANative;
// their programs are cmd/fiberecho and cmd/a2anative), process control for
// the servers it starts, and the goals P1–P8 of issue 10 and P9 (density) of issue 22, each a ratio
// measured side by side in one run (Harness.Run), rendered as BENCHMARKS.md
// (Report).
//
//	h := &bench.Harness{Bin: "bin/bench", Work: dir, GoPlugin: "plugins/echo/echo.wasm"}
//	rows, err := h.Run(ctx, nil)
//	os.WriteFile("BENCHMARKS.md", []byte(bench.Report(rows, bench.Describe(), start, time.Since(start))), 0o644)
package bench
