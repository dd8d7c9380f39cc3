package sandbox

import (
	"errors"
	"fmt"
	"time"
)

// pageSize is the WebAssembly linear memory page size.
const pageSize = 64 << 10

// maxPages is the largest memory a wasm32 module can address (4 GiB).
const maxPages = 65536

// Limits bound what one module may consume. Zero fields take the values of
// DefaultLimits; negative values are refused by Load.
type Limits struct {
	// Timeout is the deadline of one call, including the instantiation and
	// guest runtime initialization a fresh instance needs. Optional. Default: 2s.
	Timeout time.Duration
	// MemoryBytes caps each linear memory of an instance (the plugin's and
	// Extism's kernel memory, which holds input and output). Rounded down to
	// whole 64 KiB pages. Optional. Default: 64 MiB.
	MemoryBytes uint64
	// OutputBytes caps the output of one call. Optional. Default: 1 MiB.
	OutputBytes int64
	// Concurrency is the maximum number of live instances, hence of parallel
	// calls. Optional. Default: 4.
	Concurrency int
	// MinInstances are kept alive at all times (at most Concurrency), ready
	// for a call: they are created once the module is compiled and replaced
	// when one is discarded, and they keep the module's code resident.
	// Other instances are created by the calls that need them and closed
	// after IdleTimeout unused. Optional. Default: 0.
	MinInstances int
	// IdleTimeout is how long an instance stays in the pool unused before it
	// is closed (down to MinInstances); a module with no instance left and
	// no call for IdleTimeout releases its compiled code too (the next call
	// loads it again from the compilation cache). Optional. Default: 60s.
	IdleTimeout time.Duration
	// QueueWait is how long a call waits for a free instance before failing
	// with pool_saturated. Optional. Default: 100ms.
	QueueWait time.Duration
}

// DefaultLimits returns the limits used for every zero field of Limits.
func DefaultLimits() Limits {
	return Limits{
		Timeout:     2 * time.Second,
		MemoryBytes: 64 << 20,
		OutputBytes: 1 << 20,
		Concurrency: 4,
		IdleTimeout: 60 * time.Second,
		QueueWait:   100 * time.Millisecond,
	}
}

// ErrInvalidLimits is wrapped by Load errors about a ModuleSpec's limits.
var ErrInvalidLimits = errors.New("invalid sandbox limits")

// normalized fills defaults and validates l.
func (l Limits) normalized() (Limits, error) {
	d := DefaultLimits()
	if l.Timeout == 0 {
		l.Timeout = d.Timeout
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = d.MemoryBytes
	}
	if l.OutputBytes == 0 {
		l.OutputBytes = d.OutputBytes
	}
	if l.Concurrency == 0 {
		l.Concurrency = d.Concurrency
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.QueueWait == 0 {
		l.QueueWait = d.QueueWait
	}
	switch {
	case l.Timeout < 0:
		return l, fmt.Errorf("%w: timeout %v must be > 0", ErrInvalidLimits, l.Timeout)
	case l.MemoryBytes < pageSize:
		return l, fmt.Errorf("%w: memory %d bytes must be at least one 64 KiB page", ErrInvalidLimits, l.MemoryBytes)
	case l.MemoryBytes > maxPages*pageSize:
		return l, fmt.Errorf("%w: memory %d bytes exceeds the 4 GiB wasm32 maximum", ErrInvalidLimits, l.MemoryBytes)
	case l.OutputBytes < 0:
		return l, fmt.Errorf("%w: output %d bytes must be > 0", ErrInvalidLimits, l.OutputBytes)
	case l.Concurrency < 0:
		return l, fmt.Errorf("%w: concurrency %d must be > 0", ErrInvalidLimits, l.Concurrency)
	case l.MinInstances < 0 || l.MinInstances > l.Concurrency:
		return l, fmt.Errorf("%w: min instances %d must be between 0 and concurrency %d", ErrInvalidLimits, l.MinInstances, l.Concurrency)
	case l.IdleTimeout < 0:
		return l, fmt.Errorf("%w: idle timeout %v must be > 0", ErrInvalidLimits, l.IdleTimeout)
	case l.QueueWait < 0:
		return l, fmt.Errorf("%w: queue wait %v must be > 0", ErrInvalidLimits, l.QueueWait)
	}
	l.MemoryBytes = l.MemoryBytes / pageSize * pageSize
	return l, nil
}

// memoryPages is the cap in pages.
func (l Limits) memoryPages() uint32 { return uint32(l.MemoryBytes / pageSize) }
