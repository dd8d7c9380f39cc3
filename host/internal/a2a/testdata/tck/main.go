// Command tckguest is the agent `make tck` runs the A2A TCK against: one
// skill, chat, that answers every message and then waits for the next one
// (input-required), so a task lives across turns until it is canceled or
// a2a.input_timeout expires it. It reports progress on every turn.
package main

import (
	"fmt"

	"github.com/skillhost/skillhost/sdk"
)

//go:wasmexport chat
func chat() int32 {
	return sdk.Handle(func(ctx *sdk.Context, in struct {
		Text string `json:"text"`
	}) (struct{}, error) {
		task, err := ctx.Task()
		if err != nil {
			return struct{}{}, err
		}
		_ = ctx.Progress(50, "reading your message") // rate-limited reports may be dropped
		return struct{}{}, sdk.AskInput(fmt.Sprintf("You said %q (message %d). Anything else?", in.Text, task.Turn))
	})
}

func main() {}
