//go:build linux

package bench

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// A pinned process runs only on the CPUs it was given, every thread.
func TestPinProcess(t *testing.T) {
	t.Parallel()
	allowed, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	last := allowed[len(allowed)-1:]
	if err := pinProcess(cmd.Process.Pid, last); err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	want := "Cpus_allowed_list:\t" + strconv.Itoa(last[0]) + "\n"
	if !strings.Contains(string(status), want) {
		t.Errorf("after pinning to %v, /proc status lacks %q:\n%s", last, want, status)
	}
}
