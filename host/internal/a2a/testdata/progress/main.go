// Command progressguest is the test plugin of host/a2a's progress test: its
// skill "steps" reports progress three times, then returns {"done":true};
// "slow" takes its time (for cross-host streaming tests).
package main

import (
	"strconv"
	"time"

	"github.com/skillhost/skillhost/sdk"
)

type stepsOut struct {
	Done bool `json:"done"`
}

//go:wasmexport steps
func steps() int32 {
	return sdk.Handle(func(ctx *sdk.Context, _ struct{}) (stepsOut, error) {
		for i, msg := range []string{"a", "b", "c"} {
			if err := ctx.Progress(float64(25*(i+1)), msg); err != nil {
				return stepsOut{}, err
			}
		}
		return stepsOut{Done: true}, nil
	})
}

type slowIn struct {
	Steps int `json:"steps"`
	MS    int `json:"ms"`
}

//go:wasmexport slow
func slow() int32 {
	return sdk.Handle(func(ctx *sdk.Context, in slowIn) (stepsOut, error) {
		for i := range in.Steps {
			time.Sleep(time.Duration(in.MS) * time.Millisecond)
			if err := ctx.Progress(float64(100*(i+1)/in.Steps), strconv.Itoa(i+1)); err != nil {
				return stepsOut{}, err
			}
		}
		return stepsOut{Done: true}, nil
	})
}

func main() {}

type askOut struct {
	Turn    int      `json:"turn"`
	Answers []string `json:"answers"`
}

// ask is a multi-turn skill: its first turn asks "question 1" (with data
// {"n":1}); a follow-up "again" asks once more; any other follow-up ends
// the task with the turn number and every answer.
//
//go:wasmexport ask
func ask() int32 {
	return sdk.Handle(func(ctx *sdk.Context, in struct {
		Text string `json:"text"`
		Auth bool   `json:"auth"`
	}) (askOut, error) {
		task, err := ctx.Task()
		if err != nil {
			return askOut{}, err
		}
		switch {
		case task.Turn == 1 && in.Auth:
			return askOut{}, sdk.NeedAuth("sign in to continue")
		case task.Turn == 1:
			return askOut{}, sdk.AskInput("question 1").WithData(map[string]int{"n": 1})
		case in.Text == "again":
			return askOut{}, sdk.AskInput("question " + strconv.Itoa(task.Turn))
		}
		out := askOut{Turn: task.Turn}
		for _, m := range task.Messages[1:] {
			if m.Role == "user" {
				out.Answers = append(out.Answers, m.Text)
			}
		}
		return out, nil
	})
}
