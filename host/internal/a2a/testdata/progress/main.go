// Command progressguest is the test plugin of host/a2a's progress test: its
// skill "steps" reports progress three times, then returns {"done":true}.
package main

import "github.com/skillhost/skillhost/sdk"

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

func main() {}
