//go:build wasip1

package main

import "github.com/skillhost/skillhost/sdk"

// plain adapts a pure function to an sdk handler.
func plain[In, Out any](fn func(In) (Out, error)) func(*sdk.Context, In) (Out, error) {
	return func(_ *sdk.Context, in In) (Out, error) { return fn(in) }
}

//go:wasmexport json_query
func jsonQuery() int32 { return sdk.Handle(plain(query)) }

//go:wasmexport json_validate
func jsonValidate() int32 { return sdk.Handle(plain(validate)) }

//go:wasmexport json_merge
func jsonMerge() int32 { return sdk.Handle(plain(merge)) }

func main() {}
