package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// Harness runs the benchmark goals. Every goal compares skillhost with a
// baseline measured in the same run, alternating them round by round
// (A/B/A/B) so that the load of a shared machine falls on both alike.
type Harness struct {
	// Bin is the folder holding the skillhost, fiberecho and a2anative
	// programs. Required.
	Bin string
	// GoPlugin is a built Go plugin's .wasm whose export "echo" returns its
	// input (plugins/echo/echo.wasm): the copies of P4, P6 and P9.
	// Optional: without it P4, P6 and P9 are reported as not measured.
	GoPlugin string
	// Work is a scratch folder (data dirs, plugin folders, server logs).
	// Required.
	Work string
	// Rounds is the number of A/B rounds of each comparison. Default: 3.
	Rounds int
	// Duration is the counted load of each side of a round. Default: 5s.
	Duration time.Duration
	// Warmup precedes each counted load. Default: 1s.
	Warmup time.Duration
	// Concurrency is the number of client connections. Default: 32.
	Concurrency int
	// Samples scales the count-based goals (P7 calls, P8 plans; P4 starts
	// stay 2 rounds). Default: 1 (full); the smoke test uses less.
	Samples float64
	// Profile takes a CPU profile of skillhost when a throughput goal
	// misses (one more load, not counted) and adds its top functions to
	// the report. Optional.
	Profile bool
	// ProfileDir keeps those profiles. Optional. Default: Work.
	ProfileDir string
	// Progress receives one line per step. Optional.
	Progress io.Writer
}

func (h *Harness) defaults() error {
	if h.Bin == "" || h.Work == "" {
		return errors.New("bench: Harness needs Bin and Work")
	}
	if h.Rounds <= 0 {
		h.Rounds = 3
	}
	if h.Duration <= 0 {
		h.Duration = 5 * time.Second
	}
	if h.Warmup < 0 {
		h.Warmup = 0
	} else if h.Warmup == 0 {
		h.Warmup = time.Second
	}
	if h.Concurrency <= 0 {
		h.Concurrency = 32
	}
	if h.Samples <= 0 {
		h.Samples = 1
	}
	if h.Progress == nil {
		h.Progress = io.Discard
	}
	return os.MkdirAll(h.Work, 0o755)
}

// Goals are the goal ids Run knows, in order.
var Goals = []string{"P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9"}

// Run measures the goals named in only (all when empty) and returns their
// rows in order.
func (h *Harness) Run(ctx context.Context, only []string) ([]Row, error) {
	if err := h.defaults(); err != nil {
		return nil, err
	}
	runners := map[string]func(context.Context) []Row{
		"P1": h.p1, "P2": h.p2, "P3": h.p3, "P4": h.p4, "P5": h.p5, "P6": h.p6, "P7": h.p7, "P8": h.p8, "P9": h.p9,
	}
	var rows []Row
	for _, id := range Goals {
		if len(only) > 0 && !contains(only, id) {
			continue
		}
		start := time.Now()
		h.logf("%s: measuring", id)
		got := runners[id](ctx)
		for _, r := range got {
			h.logf("%s %s: %s (target %s, pass %v)%s", r.ID, r.Metric, r.Ratio, r.Target, r.Pass, errSuffix(r.Err))
		}
		h.logf("%s: done in %v", id, time.Since(start).Round(time.Second))
		rows = append(rows, got...)
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
	}
	return rows, nil
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func (h *Harness) logf(format string, args ...any) {
	fmt.Fprintf(h.Progress, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func (h *Harness) bin(name string) string { return filepath.Join(h.Bin, name) }

// dir makes a fresh scratch folder.
func (h *Harness) dir(name string) (string, error) {
	d := filepath.Join(h.Work, name)
	if err := os.RemoveAll(d); err != nil {
		return "", err
	}
	return d, os.MkdirAll(d, 0o755)
}

// hostConfig is the configuration of every skillhost the harness starts:
// defaults, except warnings-only logging, no hot reload, a queue wait long
// enough that 32 clients on a loaded 2-core machine never see
// pool_saturated, and the profiler on (used only to explain a miss).
// Goals measuring idle plugins shorten policy.idle_timeout (idleConfig).
const hostConfig = `log:
  level: warn
hot_reload: false
policy:
  queue_wait: 5s
http:
  pprof: true
`

// idleConfig is hostConfig with policy.idle_timeout set to idle: what the
// harness then measures is the state a host reaches after it, whatever
// its length (the default, 60s, would only make the run longer).
func idleConfig(idle time.Duration) string {
	return strings.Replace(hostConfig, "  queue_wait: 5s\n", fmt.Sprintf("  queue_wait: 5s\n  idle_timeout: %v\n", idle), 1)
}

// startHost starts skillhost serving plugins with state in data.
func (h *Harness) startHost(ctx context.Context, name, plugins, data string, env ...string) (*Proc, error) {
	return h.startHostWith(ctx, name, hostConfig, plugins, data, env...)
}

// startHostWith is startHost with the configuration file's text.
func (h *Harness) startHostWith(ctx context.Context, name, config, plugins, data string, env ...string) (*Proc, error) {
	cfg := filepath.Join(h.Work, name+".yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute) // a cold start compiles every plugin
	defer cancel()
	return StartProc(sctx, Spec{
		Name: name, Bin: h.bin("skillhost"), Env: env, Log: filepath.Join(h.Work, name+".log"),
		Args: []string{"serve", "--config", cfg, "--listen", "{addr}", "--plugins", plugins, "--data", data},
	})
}

// startBaseline starts a baseline program.
func (h *Harness) startBaseline(ctx context.Context, prog string) (*Proc, error) {
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return StartProc(sctx, Spec{
		Name: prog, Bin: h.bin(prog), Log: filepath.Join(h.Work, prog+".log"),
		Args: []string{"-listen", "{addr}"}, Ready: "/",
	})
}

// postJSON POSTs body to addr's /rpc and decodes the response into out.
func postJSON(addr string, body []byte, out any) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + addr + "/rpc")
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.SetBodyRaw(body)
	if err := fasthttp.DoTimeout(req, resp, 30*time.Second); err != nil {
		return err
	}
	if err := json.Unmarshal(resp.Body(), out); err != nil {
		return fmt.Errorf("HTTP %d: %w: %.200s", resp.StatusCode(), err, resp.Body())
	}
	return nil
}

// call makes one JSON-RPC call and decodes its result into out.
func call(addr, method string, params any, out any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return err
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := postJSON(addr, body, &r); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if r.Error != nil {
		return fmt.Errorf("%s: %d %s %s", method, r.Error.Code, r.Error.Message, r.Error.Data)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(r.Result, out)
}

// newSession opens a session on the skillhost at addr.
func newSession(addr string) (string, error) {
	var s struct {
		SessionID string `json:"session_id"`
	}
	err := call(addr, "_cleveragents/session/create", map[string]any{}, &s)
	return s.SessionID, err
}
