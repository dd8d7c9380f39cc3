//go:build wasip1

package main

import "github.com/skillhost/skillhost/sdk"

//go:wasmexport process_data
func processData() int32 {
	return sdk.Handle(func(_ *sdk.Context, in ProcessIn) (map[string]float64, error) { return process(in) })
}

func main() {}
