//go:build !wasip1

package main

import (
	"fmt"
	"os"
)

// main explains itself: a plugin only runs inside skillhost, built for
// GOOS=wasip1 GOARCH=wasm (`skillhost plugin build` or `make plugins`).
func main() {
	fmt.Fprintln(os.Stderr, "this is a skillhost plugin; build it with: skillhost plugin build DIR")
	os.Exit(2)
}
