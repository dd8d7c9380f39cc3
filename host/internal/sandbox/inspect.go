package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
)

// ModuleInfo describes a module's interface without instantiating it.
type ModuleInfo struct {
	// Exports are the exported function names, sorted.
	Exports []string
	// Imports are the imported functions, memories and tables as
	// "module.name", sorted. The host provides functions only.
	Imports []string
	// MemoryMinPages is the declared minimum of the module's memory (64 KiB pages).
	MemoryMinPages uint32
	// MemoryMaxPages is the declared maximum, nil when the module declares none.
	MemoryMaxPages *uint32
	// Tables are the module's tables as declared, imported ones first.
	Tables []TableInfo
	// Size is the module's size in bytes.
	Size int
	// Shape counts what the module declares (functions, globals, locals…).
	Shape ModuleShape
}

// HasExport reports whether fn is an exported function.
func (i ModuleInfo) HasExport(fn string) bool {
	_, ok := slices.BinarySearch(i.Exports, fn)
	return ok
}

// ErrInvalidModule is wrapped by every error about a module's bytes or
// interface (malformed binary, missing import, declared memory or table
// minimum over the cap).
var ErrInvalidModule = errors.New("invalid wasm module")

// Inspect decodes the import, table, memory and export sections of a wasm
// binary and checks every count the module declares against
// DefaultShapeLimits (a refusal wraps ErrInvalidModule and ErrShapeLimit
// and is a *LimitError naming the limit). It neither compiles nor
// instantiates the module, so it is cheap and safe on untrusted bytes; a
// module it accepts cannot make wazero's decoder allocate from a declared
// count more than the module's own bytes justify.
func Inspect(ctx context.Context, wasm []byte) (ModuleInfo, error) {
	return InspectWithLimits(ctx, wasm, DefaultShapeLimits())
}

// InspectWithLimits is Inspect with explicit shape limits (zero fields are
// zero limits, not defaults).
func InspectWithLimits(ctx context.Context, wasm []byte, lim ShapeLimits) (ModuleInfo, error) {
	if err := ctx.Err(); err != nil {
		return ModuleInfo{}, err
	}
	info, err := decodeInfo(wasm, lim)
	if err != nil {
		return ModuleInfo{}, fmt.Errorf("%w: %w", ErrInvalidModule, err)
	}
	return info, nil
}

// wasm section ids and extern kinds used by the decoder.
const (
	secImport = 2
	secTable  = 4
	secMemory = 5
	secExport = 7

	externFunc   = 0
	externTable  = 1
	externMemory = 2
	externGlobal = 3
	externTag    = 4
)

var wasmHeader = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

// reader is a bounds-checked cursor over wasm bytes.
type reader struct {
	b   []byte
	off int
}

var errTruncated = errors.New("truncated module")

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, errTruncated
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

// u32 reads an unsigned LEB128 of at most 5 bytes.
func (r *reader) u32() (uint32, error) {
	var v uint32
	for shift := uint(0); shift < 35; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
	return 0, errors.New("LEB128 integer too long")
}

func (r *reader) bytes(n uint32) ([]byte, error) {
	if uint64(n) > uint64(len(r.b)-r.off) {
		return nil, errTruncated
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s, nil
}

func (r *reader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	s, err := r.bytes(n)
	return string(s), err
}

// limits reads a limits type; memory64 and shared flags are reported as such.
func (r *reader) limits() (minPages uint32, maxP *uint32, err error) {
	flags, err := r.byte()
	if err != nil {
		return 0, nil, err
	}
	if flags&^0x03 != 0 {
		return 0, nil, fmt.Errorf("unsupported limits flags 0x%02x (memory64?)", flags)
	}
	if minPages, err = r.u32(); err != nil {
		return 0, nil, err
	}
	if flags&0x01 != 0 {
		m, err := r.u32()
		if err != nil {
			return 0, nil, err
		}
		maxP = &m
	}
	return minPages, maxP, nil
}

func decodeInfo(wasm []byte, lim ShapeLimits) (ModuleInfo, error) {
	info := ModuleInfo{Size: len(wasm), Exports: []string{}, Imports: []string{}}
	d := &shapeDecoder{lim: lim, shape: &info.Shape}
	if !bytes.HasPrefix(wasm, wasmHeader) {
		return info, errors.New("not a wasm binary module (bad magic or version)")
	}
	r := &reader{b: wasm, off: len(wasmHeader)}
	for r.off < len(r.b) {
		id, err := r.byte()
		if err != nil {
			return info, err
		}
		size, err := r.u32()
		if err != nil {
			return info, err
		}
		body, err := r.bytes(size)
		if err != nil {
			return info, fmt.Errorf("section %d: %w", id, err)
		}
		s := &reader{b: body}
		switch id {
		case secCustom:
			err = d.customSection(s)
		case secType:
			err = d.typeSection(s)
		case secImport:
			err = d.imports(s, &info)
		case secFunction:
			err = d.functionSection(s)
		case secTable:
			err = d.tableSection(s, &info)
		case secMemory:
			err = decodeMemories(s, &info)
		case secGlobal:
			err = d.globalSection(s)
		case secExport:
			err = d.exports(s, &info)
		case secElement:
			err = d.elementSection(s)
		case secCode:
			err = d.codeSection(s)
		case secData:
			err = d.dataSection(s)
		case secTag:
			err = d.tagSection(s)
		}
		if err != nil {
			return info, fmt.Errorf("section %d: %w", id, err)
		}
	}
	slices.Sort(info.Exports)
	slices.Sort(info.Imports)
	return info, nil
}

func (d *shapeDecoder) imports(s *reader, info *ModuleInfo) error {
	n, err := s.count("the import section", "imports", 4, d.lim.Imports)
	if err != nil {
		return err
	}
	for range n {
		mod, err := s.name()
		if err != nil {
			return err
		}
		name, err := s.name()
		if err != nil {
			return err
		}
		kind, err := s.byte()
		if err != nil {
			return err
		}
		switch kind {
		case externFunc:
			_, err = s.u32()
			d.importedFuncs++
			info.Imports = append(info.Imports, mod+"."+name)
		case externTable:
			var tt tableType
			tt, err = s.tableType()
			tt.info.Imported = true
			info.Tables = append(info.Tables, tt.info)
			// An imported table is never provided: report it as an import.
			info.Imports = append(info.Imports, mod+"."+name)
		case externMemory:
			var minPages uint32
			var maxP *uint32
			minPages, maxP, err = s.limits()
			info.MemoryMinPages, info.MemoryMaxPages = minPages, maxP
			// An imported memory is never provided: report it as an import.
			info.Imports = append(info.Imports, mod+"."+name)
		case externGlobal:
			d.shape.Globals++
			var vt byte
			if vt, err = s.byte(); err == nil {
				if err = s.refTypeRest(vt); err == nil {
					_, err = s.byte()
				}
			}
		case externTag:
			if _, err = s.byte(); err == nil {
				_, err = s.u32()
			}
		default:
			return fmt.Errorf("unknown import kind %d", kind)
		}
		if err != nil {
			return err
		}
	}
	d.shape.Functions = d.importedFuncs
	if err := check("the import section", "functions", uint64(d.importedFuncs), d.lim.Functions); err != nil {
		return err
	}
	if err := check("the import section", "globals", uint64(d.shape.Globals), d.lim.Globals); err != nil {
		return err
	}
	return check("the import section", "tables", uint64(len(info.Tables)), d.lim.Tables)
}

func decodeMemories(s *reader, info *ModuleInfo) error {
	n, err := s.u32()
	if err != nil {
		return err
	}
	for i := range n {
		minPages, maxP, err := s.limits()
		if err != nil {
			return err
		}
		if i == 0 {
			info.MemoryMinPages, info.MemoryMaxPages = minPages, maxP
		}
	}
	return nil
}

func (d *shapeDecoder) exports(s *reader, info *ModuleInfo) error {
	n, err := s.count("the export section", "exports", 3, d.lim.Exports)
	if err != nil {
		return err
	}
	d.shape.Exports = int(n)
	for range n {
		name, err := s.name()
		if err != nil {
			return err
		}
		kind, err := s.byte()
		if err != nil {
			return err
		}
		if _, err := s.u32(); err != nil {
			return err
		}
		if kind == externFunc {
			info.Exports = append(info.Exports, name)
		}
	}
	return nil
}
