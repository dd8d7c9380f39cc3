package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// P5 measures how skillhost scales from one core to two. On a machine
// with a core to spare the load generator runs apart from the host, so the
// ratio is the host's; with fewer, all share the same cores and the report
// says so.

// cpuSplit divides allowed, the CPUs this process may run on, between the
// host under test (the first hostCPUs) and the load generator (the rest).
// ok is false when no CPU would be left for the load generator.
func cpuSplit(allowed []int, hostCPUs int) (host, load []int, ok bool) {
	if hostCPUs < 1 || len(allowed) <= hostCPUs {
		return nil, nil, false
	}
	return allowed[:hostCPUs:hostCPUs], allowed[hostCPUs:], true
}

// cpuList writes cpus as "0-1" or "0,2".
func cpuList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", cpus[i], cpus[j])
		} else {
			b.WriteString(strconv.Itoa(cpus[i]))
		}
		i = j + 1
	}
	return b.String()
}

// pinApart runs procs on the first two CPUs this process may use and the
// load generator (this process) on the rest, when there is a rest. It
// returns what the report says of it and a func that gives this process
// its CPUs back.
func pinApart(procs ...*Proc) (note string, restore func()) {
	restore = func() {}
	allowed, err := allowedCPUs()
	if err != nil {
		return fmt.Sprintf("the load generator runs on the same cores as the host (%v)", err), restore
	}
	host, load, ok := cpuSplit(allowed, 2)
	if !ok {
		return fmt.Sprintf("the load generator (and everyone else on a shared machine) runs on the same %d CPUs as the host; "+
			"pinning them apart needs 3: a ratio below 1.7 here can be the client's or the neighbours' share, "+
			"not the host's scaling", len(allowed)), restore
	}
	for _, p := range procs {
		if err := pinProcess(p.Pid(), host); err != nil {
			return fmt.Sprintf("the load generator runs on the same cores as the host (%v)", err), restore
		}
	}
	if err := pinProcess(os.Getpid(), load); err != nil {
		return fmt.Sprintf("the load generator runs on the same cores as the host (%v)", err), restore
	}
	return fmt.Sprintf("pinned apart: both hosts on CPUs %s, the load generator on CPUs %s", cpuList(host), cpuList(load)),
		func() { _ = pinProcess(os.Getpid(), allowed) }
}
