// Command goguest is a real Go (wasip1) plugin for the host/sandbox tests:
// its hostile exports fail the way a Go guest really fails, so the tests can
// check that the sandbox tells an exhausted memory from a panic.
package main

import (
	"strconv"
	"time"

	"github.com/extism/go-pdk"
)

// retained keeps hog's allocations reachable so the GC cannot reclaim them.
var retained [][]byte

// spins is written by spin so its loop has an observable effect.
var spins uint64

//go:wasmexport echo
func echo() int32 {
	pdk.Output(pdk.Input())
	return 0
}

// hog allocates 1 MiB slices forever, writing every 4 KiB page of each.
// When memory.grow is refused, the Go runtime aborts ("out of memory").
//
//go:wasmexport hog
func hog() int32 {
	for {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		retained = append(retained, b)
	}
}

//go:wasmexport boom
func boom() int32 {
	panic("boom: the guest gave up")
}

//go:wasmexport spin
func spin() int32 {
	for {
		spins++
	}
}

// nap sleeps for the input's number of milliseconds, then outputs "ok".
//
//go:wasmexport nap
func nap() int32 {
	ms, err := strconv.Atoi(pdk.InputString())
	if err != nil {
		pdk.SetError(err)
		return 1
	}
	time.Sleep(time.Duration(ms) * time.Millisecond)
	pdk.OutputString("ok")
	return 0
}

// big outputs as many bytes as its input says.
//
//go:wasmexport big
func big() int32 {
	n, err := strconv.Atoi(pdk.InputString())
	if err != nil || n < 0 {
		pdk.SetErrorString("big: input must be a byte count")
		return 1
	}
	out := make([]byte, n)
	for i := range out {
		out[i] = 'x'
	}
	pdk.Output(out)
	return 0
}

func main() {}
