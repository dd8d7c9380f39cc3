//go:build wasip1

package main

import (
	"time"

	"github.com/skillhost/skillhost/sdk"
)

// Empty is the input of note_list and note_clear.
type Empty struct{}

//go:wasmexport note_add
func noteAdd() int32 {
	return sdk.Handle(func(ctx *sdk.Context, in AddIn) (AddOut, error) { return add(ctx, time.Now(), in) })
}

//go:wasmexport note_list
func noteList() int32 {
	return sdk.Handle(func(ctx *sdk.Context, _ Empty) (ListOut, error) { return list(ctx) })
}

//go:wasmexport note_clear
func noteClear() int32 {
	return sdk.Handle(func(ctx *sdk.Context, _ Empty) (ClearOut, error) { return clearNotes(ctx) })
}

func main() {}
