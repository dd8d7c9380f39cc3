// Command fiberecho serves the baseline of benchmark goal P1: the JSON-RPC
// echo of skill/execute done natively in a Fiber handler (bench.FiberEcho).
//
//	fiberecho -listen 127.0.0.1:9000
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/skillhost/skillhost/host/internal/bench"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9000", "loopback address to serve POST /rpc on")
	flag.Parse()
	if err := bench.FiberEcho().Listen(*listen); err != nil {
		fmt.Fprintln(os.Stderr, "fiberecho:", err)
		os.Exit(1)
	}
}
