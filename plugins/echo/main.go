//go:build wasip1

package main

import "github.com/skillhost/skillhost/sdk"

//go:wasmexport echo
func echoExport() int32 {
	return sdk.HandleRaw(func(_ *sdk.Context, in []byte) ([]byte, error) { return echo(in) })
}

func main() {}
