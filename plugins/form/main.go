//go:build wasip1

package main

import "github.com/skillhost/skillhost/sdk"

//go:wasmexport form_fill
func formFillExport() int32 {
	return sdk.HandleRaw(func(ctx *sdk.Context, _ []byte) ([]byte, error) {
		task, err := ctx.Task()
		if err != nil {
			return nil, err
		}
		return fill(task.Messages)
	})
}

func main() {}
