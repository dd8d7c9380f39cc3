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
