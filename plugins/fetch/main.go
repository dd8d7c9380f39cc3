//go:build wasip1

package main

import "github.com/skillhost/skillhost/sdk"

//go:wasmexport fetch_url
func fetchURLExport() int32 {
	return sdk.Handle(func(ctx *sdk.Context, in FetchIn) (FetchOut, error) { return fetchURL(ctx, in) })
}

func main() {}
