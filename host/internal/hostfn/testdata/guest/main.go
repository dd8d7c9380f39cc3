// Command hostfnguest is the test plugin of host/hostfn: each export drives
// one host function through the SDK, and "raw" calls a host function with a
// hand-made (possibly hostile) offset.
package main

import (
	"encoding/json"
	"time"

	"github.com/extism/go-pdk"

	"github.com/skillhost/skillhost/sdk"
)

type logIn struct {
	Level sdk.Level `json:"level"`
	Msg   string    `json:"msg"`
	Times int       `json:"times"`
}

//go:wasmexport log_it
func logIt() int32 {
	return sdk.Handle(func(ctx *sdk.Context, in logIn) (struct{}, error) {
		for range max(in.Times, 1) {
			ctx.Log(in.Level, in.Msg)
		}
		return struct{}{}, nil
	})
}

type progressIn struct {
	Percent float64 `json:"percent"`
	Message string  `json:"message"`
	Data    any     `json:"data"`
}

//go:wasmexport progress_it
func progressIt() int32 {
	return sdk.Handle(func(ctx *sdk.Context, in progressIn) (struct{}, error) {
		return struct{}{}, ctx.ProgressData(in.Percent, in.Message, in.Data)
	})
}

type getIn struct {
	Key string `json:"key"`
}

type getOut struct {
	Found bool            `json:"found"`
	Value json.RawMessage `json:"value"`
}

//go:wasmexport ctx_get
func ctxGet() int32 {
	return sdk.Handle(func(ctx *sdk.Context, in getIn) (getOut, error) {
		var v json.RawMessage
		found, err := ctx.Get(in.Key, &v)
		return getOut{Found: found, Value: v}, err
	})
}

type setIn struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
	TTLMs int64           `json:"ttl_ms"`
}

//go:wasmexport ctx_set
func ctxSet() int32 {
	return sdk.Handle(func(ctx *sdk.Context, in setIn) (struct{}, error) {
		return struct{}{}, ctx.Set(in.Key, in.Value, time.Duration(in.TTLMs)*time.Millisecond)
	})
}

//go:wasmexport fetch
func fetch() int32 {
	return sdk.Handle(func(ctx *sdk.Context, in sdk.Request) (*sdk.Response, error) {
		return ctx.Fetch(in)
	})
}

//go:wasmexport config
func config() int32 {
	return sdk.HandleRaw(func(ctx *sdk.Context, in []byte) ([]byte, error) {
		v, ok := ctx.Config(string(in))
		if !ok {
			return nil, sdk.Errorf("no_config", "no config key %q", in)
		}
		return []byte(v), nil
	})
}

//go:wasmexport fail
func fail() int32 {
	return sdk.Handle(func(ctx *sdk.Context, in struct{}) (struct{}, error) {
		return struct{}{}, sdk.InvalidInput("text is %s", "empty").WithData(map[string]int{"min": 1})
	})
}

//go:wasmexport boom
func boom() int32 {
	return sdk.Handle(func(ctx *sdk.Context, in struct{}) (struct{}, error) {
		panic("boom")
	})
}

type rawIn struct {
	Offset uint64 `json:"offset"` // used as is when Size is 0
	Size   int    `json:"size"`   // allocate a block of Size bytes holding Fill
	Fill   string `json:"fill"`   // JSON placed at the start of the block
	Delta  uint64 `json:"delta"`  // added to the allocated offset
}

// raw calls the log host function with a hand-made offset and returns the
// reply bytes, or {"none":true} when the host returned offset 0.
//
//go:wasmexport raw
func raw() int32 {
	var in rawIn
	if err := pdk.InputJSON(&in); err != nil {
		pdk.SetError(err)
		return 1
	}
	off := in.Offset
	if in.Size > 0 {
		buf := make([]byte, in.Size)
		for i := range buf {
			buf[i] = ' '
		}
		copy(buf, in.Fill)
		mem := pdk.AllocateBytes(buf)
		off = mem.Offset() + in.Delta
	}
	reply := rawLog(off)
	if reply == 0 {
		pdk.OutputString(`{"none":true}`)
		return 0
	}
	mem := pdk.FindMemory(reply)
	pdk.Output(mem.ReadBytes())
	return 0
}

//go:wasmimport extism:host/user log
func rawLog(offset uint64) uint64

func main() {}

type agentIn struct {
	Agent     string          `json:"agent"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	TimeoutMs int64           `json:"timeout_ms"`
}

type agentOut struct {
	AgentID      string          `json:"agent_id"`
	FallbackFrom string          `json:"fallback_from,omitempty"`
	Result       json.RawMessage `json:"result"`
}

//go:wasmexport call_agent
func callAgent() int32 {
	return sdk.Handle(func(ctx *sdk.Context, in agentIn) (agentOut, error) {
		call := sdk.AgentCall{Agent: in.Agent, Method: in.Method, Timeout: time.Duration(in.TimeoutMs) * time.Millisecond}
		if in.Params != nil {
			call.Params = in.Params
		}
		res, err := ctx.CallAgent(call)
		if err != nil {
			return agentOut{}, err // passed on as is: its code and data
		}
		return agentOut{AgentID: res.AgentID, FallbackFrom: res.FallbackFrom, Result: res.Result}, nil
	})
}
