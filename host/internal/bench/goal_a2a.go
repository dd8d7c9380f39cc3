package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// sendBody is the blocking A2A SendMessage of P3, the same bytes to both
// servers: a data part, routed by metadata.skillId to the echo skill.
var sendBody = []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m1",` +
	`"parts":[{"data":{"text":"hello, benchmark","n":12345}}],"metadata":{"skillId":"echo"}}}}`)

// checkSend accepts a completed task whose artifact is the echo, and
// acknowledges its id.
func checkSend(status int, body []byte) (string, error) {
	var r struct {
		Result struct {
			Task struct {
				ID     string `json:"id"`
				Status struct {
					State string `json:"state"`
				} `json:"status"`
				Artifacts []json.RawMessage `json:"artifacts"`
			} `json:"task"`
		} `json:"result"`
	}
	if status != 200 || json.Unmarshal(body, &r) != nil || r.Result.Task.Status.State != "TASK_STATE_COMPLETED" ||
		len(r.Result.Task.Artifacts) != 1 || !strings.Contains(string(r.Result.Task.Artifacts[0]), "hello, benchmark") {
		return "", fmt.Errorf("not a completed echo task (HTTP %d): %.300s", status, body)
	}
	return r.Result.Task.ID, nil
}

// p3 compares blocking SendMessage with the a2a-go v2 server, then kills
// skillhost with SIGKILL under load and checks, after a restart, that every
// task it acknowledged is stored, completed.
func (h *Harness) p3(ctx context.Context) []Row {
	fail := func(err error) []Row { return []Row{failed("P3", "SendMessage throughput", err)} }
	plugins, err := h.dir("p3-plugins")
	if err == nil {
		err = WriteEchoPlugin(plugins)
	}
	data, derr := h.dir("p3-data")
	if err = firstErr(err, derr); err != nil {
		return fail(err)
	}
	sh, err := h.startHost(ctx, "p3-skillhost", plugins, data)
	if err != nil {
		return fail(err)
	}
	alive := true
	defer func() {
		if alive {
			sh.Stop(10 * time.Second)
		}
	}()
	native, err := h.startBaseline(ctx, "a2anative")
	if err != nil {
		return fail(err)
	}
	defer native.Stop(5 * time.Second)
	base, subj, err := h.abRounds(ctx,
		func() (Result, error) { return h.load(ctx, native.Addr, sendBody, checkSend) },
		func() (Result, error) { return h.load(ctx, sh.Addr, sendBody, checkSend) })
	if err != nil {
		return fail(err)
	}
	row := Row{ID: "P3", Metric: "SendMessage throughput (blocking)",
		Baseline: "a2a-go v2 server " + rpsOf(base), Subject: rpsOf(subj),
		Ratio: SpreadOf(ratios(subj, base, func(r Result) float64 { return r.RPS() }))}
	atLeast(&row, 2)
	row.Notes = append(row.Notes,
		fmt.Sprintf("blocking SendMessage to a WAT echo skill, %d clients; the baseline is a2a-go v2.3.1's JSON-RPC server with a native echo executor and its in-memory task store (nothing durable); skillhost stores every task in JetStream with SyncAlways", h.Concurrency),
		fmt.Sprintf("p99: baseline %s, skillhost %s", p99Of(base), p99Of(subj)))

	h.explain(ctx, &row, sh, sendBody, checkSend)
	lost, checked, err := h.killAndVerify(ctx, sh, plugins, data, subj)
	alive = false
	if err != nil {
		row.Err, row.Pass = fmt.Errorf("durability check: %w", err), false
		return []Row{row}
	}
	if lost > 0 {
		row.Pass = false
	}
	row.Notes = append(row.Notes, fmt.Sprintf("durability: skillhost was killed (SIGKILL) while %d clients were sending; after a restart on the same data, %d of %d acknowledged tasks were read back: %d missing or not completed", h.Concurrency, checked-lost, checked, lost))
	return []Row{row}
}

// killAndVerify runs one more load against sh, SIGKILLs it halfway, restarts
// skillhost on the same data and reads every task acknowledged in rounds
// and in that load back with GetTask. It returns how many were missing or
// not completed, out of how many.
func (h *Harness) killAndVerify(ctx context.Context, sh *Proc, plugins, data string, rounds []Result) (lost, checked int, err error) {
	killAt := h.Duration / 2
	timer := time.AfterFunc(h.Warmup+killAt, sh.Kill)
	defer timer.Stop()
	res, err := Run(ctx, Load{Addr: sh.Addr, Concurrency: h.Concurrency, Warmup: h.Warmup, Duration: h.Duration,
		Body: func(int, int) []byte { return sendBody }, Check: checkSend, Timeout: 5 * time.Second})
	if err != nil {
		return 0, 0, err
	}
	sh.Kill() // in case the load ended first
	ids := res.Acks
	for _, r := range rounds {
		ids = append(ids, r.Acks...)
	}
	if len(res.Acks) == 0 {
		return 0, 0, fmt.Errorf("no task was acknowledged before the kill (%d errors, first: %v)", res.Errors, res.FirstErr)
	}
	again, err := h.startHost(ctx, "p3-skillhost-restarted", plugins, data)
	if err != nil {
		return 0, 0, err
	}
	defer again.Stop(10 * time.Second)
	for i := 0; i < len(ids); i += 64 {
		batch := ids[i:min(i+64, len(ids))]
		states, err := getTasks(again.Addr, batch)
		if err != nil {
			return 0, 0, err
		}
		for _, id := range batch {
			if states[id] != "TASK_STATE_COMPLETED" {
				lost++
				if lost <= 3 {
					fmt.Fprintf(os.Stderr, "P3: acknowledged task %s is %q after the restart\n", id, states[id])
				}
			}
		}
	}
	return lost, len(ids), nil
}

// getTasks reads tasks with one JSON-RPC batch of GetTask and returns their
// states by id ("" for a missing one).
func getTasks(addr string, ids []string) (map[string]string, error) {
	reqs := make([]map[string]any, len(ids))
	for i, id := range ids {
		reqs[i] = map[string]any{"jsonrpc": "2.0", "id": i, "method": "GetTask", "params": map[string]any{"id": id}}
	}
	body, err := json.Marshal(reqs)
	if err != nil {
		return nil, err
	}
	var resps []struct {
		ID     int `json:"id"`
		Result struct {
			ID     string `json:"id"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"result"`
	}
	if err := postJSON(addr, body, &resps); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range resps {
		if r.ID >= 0 && r.ID < len(ids) && r.Result.ID == ids[r.ID] {
			out[ids[r.ID]] = r.Result.Status.State
		}
	}
	return out, nil
}
