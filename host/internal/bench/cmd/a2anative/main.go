// Command a2anative serves the baseline of benchmark goal P3: the official
// a2a-go v2 server with a native echo executor and its in-memory task store
// (bench.A2ANative), JSON-RPC on POST /rpc.
//
//	a2anative -listen 127.0.0.1:9001
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/skillhost/skillhost/host/internal/bench"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9001", "loopback address to serve POST /rpc on")
	flag.Parse()
	srv := &http.Server{Addr: *listen, Handler: bench.A2ANative(), ReadHeaderTimeout: 10 * time.Second}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "a2anative:", err)
		os.Exit(1)
	}
}
