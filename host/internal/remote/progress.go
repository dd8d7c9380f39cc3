package remote

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"unicode/utf8"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"golang.org/x/time/rate"

	"github.com/skillhost/skillhost/host/internal/hostfn"
)

// streamA2A sends req with SendStreamingMessage and forwards the peer's
// working updates to progress until the task ends or is interrupted: then
// the task as stored (GetTask); a stream that ends before leaves the task
// as it last showed it, for await to poll. A message answer is returned as
// it is. The peer
// controls the rate: reports past hostfn.ProgressRate a second are dropped
// (progress is best effort), so a chatty peer costs this host no more than
// a chatty plugin.
func (p *peer) streamA2A(ctx context.Context, client *a2aclient.Client, req *a2av1.SendMessageRequest, progress hostfn.ProgressSink) (a2av1.SendMessageResult, error) {
	x := &exchange{}
	limit := rate.NewLimiter(hostfn.ProgressRate, hostfn.ProgressBurst)
	var task *a2av1.Task
	for ev, err := range client.SendStreamingMessage(withExchange(ctx, x), req) {
		if err != nil && task != nil && ctx.Err() == nil {
			// The task exists: a stream that broke (or outgrew
			// max_response, which counts the whole stream) leaves its
			// result to polling.
			p.log.Debug("remote agent: task stream ended early; polling the task", "agent", p.cfg.ID, "task_id", task.ID, "err", err)
			task.Status.State = a2av1.TaskStateWorking
			return task, nil
		}
		if err != nil {
			return nil, p.a2aFailure(x, err)
		}
		switch e := ev.(type) {
		case *a2av1.Message:
			return e, nil
		case *a2av1.Task:
			task = e
		case *a2av1.TaskStatusUpdateEvent:
			if task == nil {
				task = &a2av1.Task{ID: e.TaskID, ContextID: e.ContextID}
			}
			task.Status = e.Status
			if e.Status.State == a2av1.TaskStateWorking && e.Status.Message != nil && limit.Allow() {
				if pr, ok := progressOf(e.Status.Message); ok {
					progress.Progress(pr)
				}
			}
		}
		if task != nil && ended(task.Status.State) {
			break
		}
	}
	if task == nil {
		return nil, invalidAnswer(p.cfg.ID, "its SendStreamingMessage stream carried no task")
	}
	if !ended(task.Status.State) {
		return task, nil // the stream ended early: await polls
	}
	// Ended: the answer is the task as stored (its artifacts, its signed
	// provenance), not as the events sketched it.
	x = &exchange{}
	stored, err := client.GetTask(withExchange(ctx, x), &a2av1.GetTaskRequest{ID: task.ID})
	if err != nil {
		return nil, p.a2aFailure(x, err)
	}
	return stored, nil
}

// progressOf reads a working update's message as a progress report: its
// text parts are the message, a data part's "percent" (a number) the
// percent and its "data" the data, as skillhost peers send progress; a
// message without text or percent is none. Sizes are capped as a plugin's
// reports are.
func progressOf(m *a2av1.Message) (hostfn.Progress, bool) {
	var pr hostfn.Progress
	var text strings.Builder
	found := false
	for _, part := range m.Parts {
		if part == nil {
			continue
		}
		switch v := part.Content.(type) {
		case a2av1.Text:
			text.WriteString(string(v))
			found = found || v != ""
		case a2av1.Data:
			obj, _ := v.Value.(map[string]any)
			if pct, ok := obj["percent"].(float64); ok && !math.IsNaN(pct) {
				pr.Percent, found = min(max(pct, 0), 100), true
			}
			if d, ok := obj["data"]; ok {
				if b, err := json.Marshal(d); err == nil && len(b) <= hostfn.MaxProgressData {
					pr.Data = b
				}
			}
		}
	}
	pr.Message = clipUTF8(text.String(), hostfn.MaxProgressMessage)
	return pr, found
}

// clipUTF8 cuts s to at most n bytes on a rune boundary.
func clipUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
