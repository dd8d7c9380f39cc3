//go:build wasip1

package sdk

import (
	"github.com/extism/go-pdk"

	"github.com/skillhost/skillhost/sdk/internal/wire"
)

func init() { current = pdkBackend{} }

// pdkBackend talks to the Extism host through go-pdk.
type pdkBackend struct{}

func (pdkBackend) input() []byte                    { return pdk.Input() }
func (pdkBackend) output(b []byte)                  { pdk.Output(b) }
func (pdkBackend) setError(b []byte)                { pdk.SetErrorString(string(b)) }
func (pdkBackend) Config(key string) (string, bool) { return pdk.GetConfig(key) }

func (pdkBackend) Call(fn string, req []byte) []byte {
	mem := pdk.AllocateBytes(req)
	defer mem.Free()
	var off uint64
	switch fn {
	case wire.FnLog:
		off = hostLog(mem.Offset())
	case wire.FnProgress:
		off = hostProgress(mem.Offset())
	case wire.FnContextGet:
		off = hostContextGet(mem.Offset())
	case wire.FnContextSet:
		off = hostContextSet(mem.Offset())
	case wire.FnHTTPFetch:
		off = hostHTTPFetch(mem.Offset())
	case wire.FnAgentCall:
		off = hostAgentCall(mem.Offset())
	case wire.FnTaskHistory:
		off = hostTaskHistory(mem.Offset())
	case wire.FnTaskInterrupt:
		off = hostTaskInterrupt(mem.Offset())
	default:
		return nil
	}
	if off == 0 {
		return nil
	}
	reply := pdk.FindMemory(off)
	defer reply.Free()
	return reply.ReadBytes()
}

//go:wasmimport extism:host/user log
func hostLog(offset uint64) uint64

//go:wasmimport extism:host/user progress
func hostProgress(offset uint64) uint64

//go:wasmimport extism:host/user context_get
func hostContextGet(offset uint64) uint64

//go:wasmimport extism:host/user context_set
func hostContextSet(offset uint64) uint64

//go:wasmimport extism:host/user http_fetch
func hostHTTPFetch(offset uint64) uint64

//go:wasmimport extism:host/user agent_call
func hostAgentCall(offset uint64) uint64

//go:wasmimport extism:host/user task_history
func hostTaskHistory(offset uint64) uint64

//go:wasmimport extism:host/user task_interrupt
func hostTaskInterrupt(offset uint64) uint64
