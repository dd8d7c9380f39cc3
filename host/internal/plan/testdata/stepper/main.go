// Command stepperguest is the test plugin of the plan tests: steps that
// count their runs in session context, sleep, time out on purpose, trap, and
// an event export that records what it receives.
package main

import (
	"encoding/json"
	"time"

	"github.com/skillhost/skillhost/sdk"
)

type workIn struct {
	Key       string          `json:"key"`        // counts runs under context key "runs:<key>"
	SleepMS   int             `json:"sleep_ms"`   // then sleeps this long
	FailTimes int             `json:"fail_times"` // the first fail_times runs never return (they sleep until they time out)
	Value     json.RawMessage `json:"value"`      // echoed
}

type workOut struct {
	Key   string          `json:"key,omitempty"`
	Run   int             `json:"run"`
	Value json.RawMessage `json:"value,omitempty"`
}

//go:wasmexport work
func work() int32 {
	return sdk.Handle(func(ctx *sdk.Context, in workIn) (workOut, error) {
		run := 0
		if in.Key != "" {
			if _, err := ctx.Get("runs:"+in.Key, &run); err != nil {
				return workOut{}, err
			}
			run++
			if err := ctx.Set("runs:"+in.Key, run, 0); err != nil {
				return workOut{}, err
			}
		}
		if run <= in.FailTimes && in.FailTimes > 0 {
			// Never returns: the host's deadline ends it. Asleep, not
			// spinning, so a loaded machine's cores stay free for the rest.
			time.Sleep(24 * time.Hour)
		}
		if in.SleepMS > 0 {
			time.Sleep(time.Duration(in.SleepMS) * time.Millisecond)
		}
		return workOut{Key: in.Key, Run: run, Value: in.Value}, nil
	})
}

//go:wasmexport crash
func crash() int32 {
	return sdk.Handle(func(*sdk.Context, struct{}) (struct{}, error) {
		panic("stepper: crash on purpose")
	})
}

type event struct {
	ID    string `json:"id"`
	Event string `json:"event"`
}

//go:wasmexport on_event
func onEvent() int32 {
	return sdk.HandleRaw(func(ctx *sdk.Context, in []byte) ([]byte, error) {
		var ev event
		if err := json.Unmarshal(in, &ev); err != nil {
			return nil, sdk.InvalidInput("event does not decode: %v", err)
		}
		if err := ctx.Set("event:"+ev.ID, json.RawMessage(in), 0); err != nil {
			return nil, err
		}
		n := 0
		if _, err := ctx.Get("events_received", &n); err != nil {
			return nil, err
		}
		return nil, ctx.Set("events_received", n+1, 0)
	})
}

func main() {}
