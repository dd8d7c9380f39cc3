//go:build wasip1

package main

import "github.com/skillhost/skillhost/sdk"

//go:wasmexport render
func renderExport() int32 {
	return sdk.Handle(func(_ *sdk.Context, in RenderIn) (RenderOut, error) { return render(in) })
}

func main() {}
