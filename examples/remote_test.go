package examples_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// servingURL finds the URL in a host's "serving HTTP" log line.
var servingURL = regexp.MustCompile(`msg="serving HTTP" url=(\S+)`)

// hostProcess is a `skillhost serve` child process.
type hostProcess struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{} // closed when the process has exited
	mu   sync.Mutex
	log  bytes.Buffer // its stderr
}

// mustServe starts `skillhost serve --config config` on 127.0.0.1:0 with
// its own data folder and waits until it serves HTTP. It is stopped when the
// test ends, if it still runs.
func mustServe(t *testing.T, config string, args ...string) *hostProcess {
	t.Helper()
	args = append([]string{"serve", "--config", config, "--listen", "127.0.0.1:0", "--data", t.TempDir()}, args...)
	p := &hostProcess{cmd: exec.Command(filepath.Join(bin, "skillhost"), args...), done: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serving := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.log.Write(sc.Bytes())
			p.log.WriteByte('\n')
			p.mu.Unlock()
			if m := servingURL.FindSubmatch(sc.Bytes()); m != nil {
				select {
				case serving <- string(m[1]):
				default:
				}
			}
		}
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop(t) })
	select {
	case p.url = <-serving:
		return p
	case <-p.done:
		t.Fatalf("skillhost %v exited before serving:\n%s", args, p.stderr())
	case <-time.After(2 * time.Minute): // plugins compile first; the machine may be loaded
		t.Fatalf("skillhost %v did not serve within 2 minutes:\n%s", args, p.stderr())
	}
	return nil
}

func (p *hostProcess) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// stop sends SIGTERM and waits for the process to end (SIGKILL after a
// minute).
func (p *hostProcess) stop(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("skillhost did not stop within a minute of SIGTERM:\n%s", p.stderr())
	}
}

// TestRemote runs examples/remote against two real host processes: a skill
// on host A calls a skill on host B, then host B stops and host A's fallback
// answers.
func TestRemote(t *testing.T) {
	t.Parallel()
	b := mustServe(t, "remote/host-b.yaml", "--plugins", "remote/host-b/plugins")
	sample, err := os.ReadFile("remote/host-a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(sample, []byte("http://127.0.0.1:8082")) {
		t.Fatal("remote/host-a.yaml does not name host B as http://127.0.0.1:8082")
	}
	configA := filepath.Join(t.TempDir(), "host-a.yaml")
	if err := os.WriteFile(configA, bytes.ReplaceAll(sample, []byte("http://127.0.0.1:8082"), []byte(b.url)), 0o644); err != nil {
		t.Fatal(err)
	}
	a := mustServe(t, configA, "--plugins", "remote/host-a/plugins")

	lines := runExample(t, "remote", "--url", a.url)
	matchLines(t, lines, []string{
		regexp.QuoteMeta(`skill ask-b on host A, agent_call b-echo.echo -> {"message":"hello from host A"} (answered by b-echo)`),
		regexp.QuoteMeta(`agent/call b-echo.echo on host A -> {"message":"hi, host B"} (answered by b-echo)`),
	})

	b.stop(t)
	lines = runExample(t, "remote", "--url", a.url)
	matchLines(t, lines, []string{
		regexp.QuoteMeta(`skill ask-b on host A, agent_call b-echo.echo -> {"message":"hello from host A"} (answered by local-echo, the fallback for b-echo)`),
		regexp.QuoteMeta(`agent/call b-echo.echo on host A -> {"message":"hi, host B"} (answered by local-echo, the fallback for b-echo)`),
	})
	if log := a.stderr(); !strings.Contains(log, "agent call answered by a fallback") {
		t.Errorf("host A did not log the fallback:\n%s", log)
	}
}
