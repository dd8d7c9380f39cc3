package sandbox

import (
	"errors"
	"fmt"
)

// ShapeLimits bound what a module may declare. wazero allocates memory in
// proportion to several declared counts before it compiles anything (a
// function declaring 2^32-1 locals makes its decoder allocate 4 GiB, and its
// compiler far more, from a 56-byte module), and an instance allocates host
// memory per global, table and passive element. Inspect refuses a module
// over any of these limits before wazero sees it.
//
// The defaults follow the implementation limits every web browser enforces
// (the WebAssembly JS API), tightened where an instance pays per item, and
// sit far above what real plugins declare (see the README, "Sandbox
// limits", for the measurements).
type ShapeLimits struct {
	// Types caps the type section's entries. Default: 100,000.
	Types uint32
	// Imports caps the imports. Default: 10,000.
	Imports uint32
	// Functions caps the functions, imported and defined. Default: 100,000.
	Functions uint32
	// Params caps one function type's parameters, and Results its
	// results. Default: 1,000 each.
	Params, Results uint32
	// Locals caps the locals one function declares (its parameters not
	// counted). Default: 50,000.
	Locals uint32
	// TotalLocals caps the locals of all functions together: wazero keeps
	// every function's local types while it compiles the module, and a few
	// bytes declare 50,000 locals. Default: 1,000,000.
	TotalLocals uint32
	// BodyBytes caps one function body's size in bytes (wazero needs about
	// 50 bytes of memory per byte of code to compile it). Default: 1 MiB.
	BodyBytes uint32
	// Globals caps the globals, imported and defined. Default: 10,000.
	Globals uint32
	// Tables caps the tables, imported and defined. Default: 100.
	Tables uint32
	// Exports caps the exports. Default: 100,000.
	Exports uint32
	// ElementSegments caps the element segments. Default: 10,000.
	ElementSegments uint32
	// ElementItems caps the items of all element segments together.
	// Default: 1,000,000.
	ElementItems uint32
	// DataSegments caps the data segments. Default: 100,000.
	DataSegments uint32
	// Tags caps the exception tags. Default: 10,000.
	Tags uint32
}

// DefaultShapeLimits returns the limits Inspect applies.
func DefaultShapeLimits() ShapeLimits {
	return ShapeLimits{
		Types:           100_000,
		Imports:         10_000,
		Functions:       100_000,
		Params:          1_000,
		Results:         1_000,
		Locals:          50_000,
		TotalLocals:     1_000_000,
		BodyBytes:       1 << 20,
		Globals:         10_000,
		Tables:          100,
		Exports:         100_000,
		ElementSegments: 10_000,
		ElementItems:    1_000_000,
		DataSegments:    100_000,
		Tags:            10_000,
	}
}

// ModuleShape is what a module declares, as counted by Inspect.
type ModuleShape struct {
	Types           int `json:"types"`     // type section entries (recursion group members included)
	Functions       int `json:"functions"` // imported and defined functions
	Globals         int `json:"globals"`   // imported and defined globals
	Exports         int `json:"exports"`
	ElementSegments int `json:"element_segments"`
	ElementItems    int `json:"element_items"` // items of all element segments
	PassiveItems    int `json:"passive_items"` // items of passive element segments (copied into every instance)
	DataSegments    int `json:"data_segments"`
	// Locals is the locals of all functions, MaxLocals the most one
	// function declares, and MaxFrameSlots the most parameters plus locals
	// of one function.
	Locals        int `json:"locals"`
	MaxLocals     int `json:"max_locals"`
	MaxFrameSlots int `json:"max_frame_slots"`
	// MaxBodyBytes is the largest function body, and CodeBytes all bodies together.
	MaxBodyBytes int `json:"max_body_bytes"`
	CodeBytes    int `json:"code_bytes"`
}

// ErrShapeLimit is wrapped (with ErrInvalidModule) by every refusal of a
// module that declares more than a ShapeLimits field allows.
var ErrShapeLimit = errors.New("module exceeds a sandbox limit")

// LimitError is a module declaring more than a limit allows. Its message
// names the limit, the declared value and the cap.
type LimitError struct {
	Where string // what declares it: "function 12", "global section"…
	Limit string // the limit, in words: "locals per function"
	Value uint64 // what the module declares
	Max   uint64 // the cap
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s declares %d %s, over the sandbox limit of %d", e.Where, e.Value, e.Limit, e.Max)
}

// Unwrap makes errors.Is(err, ErrShapeLimit) true.
func (e *LimitError) Unwrap() error { return ErrShapeLimit }

// check returns a *LimitError when v > maxV.
func check(where, limit string, v uint64, maxV uint32) error {
	if v > uint64(maxV) {
		return &LimitError{Where: where, Limit: limit, Value: v, Max: uint64(maxV)}
	}
	return nil
}

// count reads a vector length and refuses one that cannot fit in the bytes
// left (each element takes at least minBytes) or exceeds maxV. wazero sizes
// its slices from this number before it reads an element, so a count is
// never trusted past these checks.
func (r *reader) count(where, limit string, minBytes int, maxV uint32) (uint32, error) {
	return r.countFrom(where, limit, minBytes, 0, maxV)
}

// countFrom is count for a vector adding to base items already declared
// (imported functions, globals or tables): base+n is checked against maxV.
func (r *reader) countFrom(where, limit string, minBytes int, base uint64, maxV uint32) (uint32, error) {
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	if err := check(where, limit, base+uint64(n), maxV); err != nil {
		return 0, err
	}
	if uint64(n)*uint64(minBytes) > uint64(len(r.b)-r.off) {
		return 0, fmt.Errorf("%s: %d %s cannot fit in the %d bytes left: %w", where, n, limit, len(r.b)-r.off, errTruncated)
	}
	return n, nil
}

// valType reads a value type (one byte, or a reference type with its heap type).
func (r *reader) valType() error {
	b, err := r.byte()
	if err != nil {
		return err
	}
	return r.refTypeRest(b)
}

// satAdd is a+b, saturating at the uint32 maximum.
func satAdd(a, b uint32) uint32 {
	if a > ^uint32(0)-b {
		return ^uint32(0)
	}
	return a + b
}
