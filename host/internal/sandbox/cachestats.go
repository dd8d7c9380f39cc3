package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// compileCounts tells compilations the on-disk cache served from those
// that compiled: wazero exposes neither, but a miss stores a new file in
// the cache folder (<CacheDir>/wazero-<version>-<arch>-<os>/<key>) and a
// hit stores none. Compiles running at once (RuntimeConfig.CompileWorkers)
// may blur the count: a hit that ends while another compile stores an
// entry counts as a miss.
type compileCounts struct{ hits, misses atomic.Uint64 }

// count records one compilation, given the cache's entries before and
// after it (-1: no on-disk cache; nothing is counted).
func (c *compileCounts) count(before, after int) {
	switch {
	case before < 0 || after < 0:
	case after > before:
		c.misses.Add(1)
	default:
		c.hits.Add(1)
	}
}

// cacheEntries counts the compiled modules stored under dir (-1 when dir
// is "" or unreadable).
func cacheEntries(dir string) int {
	if dir == "" {
		return -1
	}
	subs, err := os.ReadDir(dir)
	if err != nil {
		return -1
	}
	n := 0
	for _, sub := range subs {
		if !sub.IsDir() || !strings.HasPrefix(sub.Name(), "wazero-") { // not the load-check record
			continue
		}
		ents, err := os.ReadDir(filepath.Join(dir, sub.Name()))
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !e.IsDir() && !strings.HasSuffix(e.Name(), ".tmp") {
				n++
			}
		}
	}
	return n
}
