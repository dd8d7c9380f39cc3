package sandbox

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// fallbackMemory is assumed when the memory available cannot be read.
const fallbackMemory = 4 << 30

// DefaultMaxLiveBytes is the budget a Runtime gets when its config sets
// none: three quarters of the memory available to this process, which is
// the cgroup's memory limit when one is set (v2 memory.max, v1
// memory.limit_in_bytes), else the machine's RAM (/proc/meminfo MemTotal),
// else 4 GiB.
func DefaultMaxLiveBytes() uint64 {
	return availableMemory() / 4 * 3
}

func availableMemory() uint64 {
	avail := uint64(0)
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				if kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64); err == nil {
					avail = kb << 10
				}
			}
		}
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64) // "max" (no limit) does not parse
		if err == nil && n > 0 && (avail == 0 || n < avail) {
			avail = n
		}
	}
	if avail == 0 {
		return fallbackMemory
	}
	return avail
}
