package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// Proc is a server the harness started: a baseline program or skillhost.
type Proc struct {
	Name string
	Addr string // its loopback listen address
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error // the exit error, once done is closed
}

// Spec describes a server to start.
type Spec struct {
	Name string   // for messages
	Bin  string   // the program
	Args []string // "{addr}" in an argument is replaced by the listen address
	Env  []string // added to the harness's environment
	Log  string   // file receiving the program's stdout and stderr
	// Ready is the path polled with GET until it answers (any status).
	// Default: "/health".
	Ready string
}

// StartProc starts spec on a free loopback port and waits (until ctx
// ends) for it to answer HTTP.
func StartProc(ctx context.Context, spec Spec) (*Proc, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	args := make([]string, len(spec.Args))
	for i, a := range spec.Args {
		args[i] = strings.ReplaceAll(a, "{addr}", addr)
	}
	logf, err := os.Create(spec.Log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(spec.Bin, args...)
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	p := &Proc{Name: spec.Name, Addr: addr, cmd: cmd, log: logf, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	ready := spec.Ready
	if ready == "" {
		ready = "/health"
	}
	if err := p.waitHTTP(ctx, ready); err != nil {
		p.Kill()
		return nil, fmt.Errorf("%s did not start (log: %s): %w", spec.Name, spec.Log, err)
	}
	return p, nil
}

// waitHTTP polls GET path until the server answers.
func (p *Proc) waitHTTP(ctx context.Context, path string) error {
	c := &fasthttp.Client{}
	for {
		status, _, err := c.GetTimeout(nil, "http://"+p.Addr+path, time.Second)
		if err == nil && status > 0 {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("exited: %v", p.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Pid is the server's process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Stop asks the server to exit (SIGTERM) and kills it after grace.
func (p *Proc) Stop(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// Kill ends the server with SIGKILL (as a crash would) and waits for it.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// RSS is the server's resident set size, from /proc (Linux only).
func (p *Proc) RSS() (uint64, error) { return RSSOf(p.Pid()) }

// RSSOf reads VmRSS of pid from /proc/<pid>/status.
func RSSOf(pid int) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("bench: no VmRSS in /proc status")
}

// FreeAddr returns a loopback address with a port free right now.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
