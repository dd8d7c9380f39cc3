//go:build wasip1

package main

import "github.com/skillhost/skillhost/sdk"

// plain adapts a pure function to an sdk handler.
func plain[In, Out any](fn func(In) (Out, error)) func(*sdk.Context, In) (Out, error) {
	return func(_ *sdk.Context, in In) (Out, error) { return fn(in) }
}

//go:wasmexport uppercase
func uppercase() int32 { return sdk.Handle(plain(upper)) }

//go:wasmexport lowercase
func lowercase() int32 { return sdk.Handle(plain(lower)) }

//go:wasmexport title_case
func titleCase() int32 { return sdk.Handle(plain(title)) }

//go:wasmexport word_count
func wordCount() int32 { return sdk.Handle(plain(count)) }

//go:wasmexport slugify
func slugifyExport() int32 { return sdk.Handle(plain(slugify)) }

//go:wasmexport truncate
func truncateExport() int32 { return sdk.Handle(plain(truncate)) }

//go:wasmexport reverse
func reverseExport() int32 { return sdk.Handle(plain(reverse)) }

func main() {}
