// Command benchrun runs the benchmark harness (make bench) and writes
// BENCHMARKS.md: every goal (issues 10 and 22) as a ratio against a baseline
// measured in the same run (see docs/guides/performance.md).
//
//	benchrun -bin bin/bench -go-plugin plugins/echo/echo.wasm -out BENCHMARKS.md
//	benchrun -only P1,P3 -rounds 5 -duration 10s -out -
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/skillhost/skillhost/host/internal/bench"
)

func main() {
	h := &bench.Harness{Progress: os.Stderr}
	flag.StringVar(&h.Bin, "bin", "bin/bench", "folder holding skillhost, fiberecho and a2anative")
	flag.StringVar(&h.GoPlugin, "go-plugin", "plugins/echo/echo.wasm", "a built Go echo plugin (P4, P6, P9)")
	flag.StringVar(&h.Work, "work", "", "scratch folder (default: a new temporary folder)")
	flag.IntVar(&h.Rounds, "rounds", 3, "A/B rounds per comparison")
	flag.DurationVar(&h.Duration, "duration", 5*time.Second, "counted load per side per round")
	flag.DurationVar(&h.Warmup, "warmup", time.Second, "warm-up before each counted load")
	flag.IntVar(&h.Concurrency, "c", 32, "client connections")
	flag.BoolVar(&h.Profile, "profile", true, "profile skillhost when a throughput goal misses")
	flag.StringVar(&h.ProfileDir, "profile-dir", "bin/bench", "where those profiles are kept")
	only := flag.String("only", "", "comma-separated goals to run (default: all)")
	out := flag.String("out", "BENCHMARKS.md", "report file ('-': stdout only)")
	budget := flag.Duration("budget", 30*time.Minute, "stop after this long")
	flag.Parse()
	if h.Work == "" {
		dir, err := os.MkdirTemp("", "skillhost-bench-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchrun:", err)
			os.Exit(1)
		}
		defer os.RemoveAll(dir)
		h.Work = dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), *budget)
	defer cancel()
	var goals []string
	if *only != "" {
		goals = strings.Split(*only, ",")
	}
	started := time.Now()
	machine := bench.Describe()
	rows, err := h.Run(ctx, goals)
	machine.LoadEnd = bench.LoadAverage()
	report := bench.Report(rows, machine, started, time.Since(started))
	fmt.Print(bench.Table(rows))
	if *out != "-" {
		if werr := os.WriteFile(*out, []byte(report), 0o644); werr != nil {
			fmt.Fprintln(os.Stderr, "benchrun:", werr)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "wrote", *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}
