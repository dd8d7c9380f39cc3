package sandbox

import (
	"fmt"
)

// More wasm section ids (see inspect.go for the others).
const (
	secCustom    = 0
	secType      = 1
	secFunction  = 3
	secGlobal    = 6
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
)

// shapeDecoder walks every section wazero decodes and checks each declared
// count against the bytes that must hold it and against its ShapeLimits
// field, mirroring every place where wazero v1.12's decoder allocates from
// a count (internal/wasm/binary: section.go, code.go, value.go, data.go,
// element.go, names.go).
type shapeDecoder struct {
	lim   ShapeLimits
	shape *ModuleShape

	typeParams    []uint32 // parameter count of each type
	funcTypes     []uint32 // type index of each defined function
	importedFuncs int
}

// typeSection reads the type section: function types, possibly in
// recursion groups (0x4e).
func (d *shapeDecoder) typeSection(s *reader) error {
	n, err := s.count("the type section", "types", 2, d.lim.Types)
	if err != nil {
		return err
	}
	for range n {
		form, err := s.byte()
		if err != nil {
			return err
		}
		if form != 0x4e {
			if err := d.funcType(s, form); err != nil {
				return err
			}
			continue
		}
		members, err := s.count("a recursion group", "types", 3, d.lim.Types)
		if err != nil {
			return err
		}
		for range members {
			if form, err = s.byte(); err != nil {
				return err
			}
			if err := d.funcType(s, form); err != nil {
				return err
			}
		}
	}
	return nil
}

// funcType reads one function type whose form byte is already read.
func (d *shapeDecoder) funcType(s *reader, form byte) error {
	idx := len(d.typeParams)
	if err := check("the type section", "types", uint64(idx+1), d.lim.Types); err != nil {
		return err
	}
	if form != 0x60 {
		return fmt.Errorf("type %d: unsupported type form 0x%02x", idx, form)
	}
	where := fmt.Sprintf("type %d", idx)
	params, err := s.count(where, "parameters", 1, d.lim.Params)
	if err != nil {
		return err
	}
	for range params {
		if err := s.valType(); err != nil {
			return err
		}
	}
	results, err := s.count(where, "results", 1, d.lim.Results)
	if err != nil {
		return err
	}
	for range results {
		if err := s.valType(); err != nil {
			return err
		}
	}
	d.typeParams = append(d.typeParams, params)
	d.shape.Types = len(d.typeParams)
	return nil
}

// functionSection reads the type index of each defined function.
func (d *shapeDecoder) functionSection(s *reader) error {
	n, err := s.countFrom("the module", "functions (imported ones included)", 1, uint64(d.importedFuncs), d.lim.Functions)
	if err != nil {
		return err
	}
	d.funcTypes = make([]uint32, n)
	for i := range n {
		if d.funcTypes[i], err = s.u32(); err != nil {
			return err
		}
	}
	d.shape.Functions = d.importedFuncs + int(n)
	return nil
}

// globalSection reads the defined globals: type, mutability, initializer.
func (d *shapeDecoder) globalSection(s *reader) error {
	imported := d.shape.Globals
	n, err := s.countFrom("the module", "globals (imported ones included)", 4, uint64(imported), d.lim.Globals)
	if err != nil {
		return err
	}
	for range n {
		if err := s.valType(); err != nil {
			return err
		}
		if _, err := s.byte(); err != nil {
			return err
		}
		if err := s.skipConstExpr(); err != nil {
			return err
		}
	}
	d.shape.Globals = imported + int(n)
	return nil
}

// elementSection reads the element segments (the eight encodings of the
// bulk-memory and reference-types proposals) and counts their items.
func (d *shapeDecoder) elementSection(s *reader) error {
	n, err := s.count("the element section", "element segments", 2, d.lim.ElementSegments)
	if err != nil {
		return err
	}
	d.shape.ElementSegments = int(n)
	for i := range n {
		flags, err := s.u32()
		if err != nil {
			return err
		}
		if flags > 7 {
			return fmt.Errorf("element segment %d: unknown encoding %d", i, flags)
		}
		if flags&0x02 != 0 && flags&0x01 == 0 { // 2, 6: explicit table index
			if _, err := s.u32(); err != nil {
				return err
			}
		}
		if flags&0x01 == 0 { // 0, 2, 4, 6: active, with an offset
			if err := s.skipConstExpr(); err != nil {
				return err
			}
		}
		if flags&0x03 != 0 { // 1, 2, 3, 5, 6, 7: element kind or reference type
			if flags&0x04 == 0 {
				_, err = s.byte()
			} else {
				err = s.valType()
			}
			if err != nil {
				return err
			}
		}
		where := fmt.Sprintf("element segment %d", i)
		items, err := s.count(where, "items", 1, d.lim.ElementItems)
		if err != nil {
			return err
		}
		total := uint64(d.shape.ElementItems) + uint64(items)
		if err := check("the element section", "items in all element segments", total, d.lim.ElementItems); err != nil {
			return err
		}
		d.shape.ElementItems = int(total)
		if flags&0x03 == 0x01 { // 1, 5: passive, copied into every instance
			d.shape.PassiveItems += int(items)
		}
		for range items {
			if flags&0x04 == 0 {
				_, err = s.u32()
			} else {
				err = s.skipConstExpr()
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// codeSection reads each function body's size and local declarations; the
// instructions themselves are skipped.
func (d *shapeDecoder) codeSection(s *reader) error {
	n, err := s.count("the code section", "function bodies", 2, d.lim.Functions)
	if err != nil {
		return err
	}
	if int(n) != len(d.funcTypes) {
		return fmt.Errorf("the code section has %d bodies for %d functions", n, len(d.funcTypes))
	}
	for i := range n {
		fn := fmt.Sprintf("function %d", d.importedFuncs+int(i))
		size, err := s.u32()
		if err != nil {
			return err
		}
		if err := check(fn, "bytes of code", uint64(size), d.lim.BodyBytes); err != nil {
			return err
		}
		body, err := s.bytes(size)
		if err != nil {
			return fmt.Errorf("%s: %w", fn, err)
		}
		locals, err := d.locals(&reader{b: body}, fn)
		if err != nil {
			return err
		}
		slots := uint64(locals)
		if t := d.funcTypes[i]; int(t) < len(d.typeParams) {
			slots += uint64(d.typeParams[t])
		}
		d.shape.Locals += int(locals)
		if err := check("the code section", "locals in all functions", uint64(d.shape.Locals), d.lim.TotalLocals); err != nil {
			return err
		}
		d.shape.MaxLocals = max(d.shape.MaxLocals, int(locals))
		d.shape.MaxFrameSlots = max(d.shape.MaxFrameSlots, int(slots))
		d.shape.MaxBodyBytes = max(d.shape.MaxBodyBytes, int(size))
		d.shape.CodeBytes += int(size)
	}
	return nil
}

// locals reads a body's local declarations and returns how many locals
// they declare. The sum is checked after each declaration, so it cannot
// overflow.
func (d *shapeDecoder) locals(b *reader, fn string) (uint32, error) {
	decls, err := b.count(fn, "local declarations", 2, d.lim.Locals)
	if err != nil {
		return 0, err
	}
	var sum uint64
	for range decls {
		n, err := b.u32()
		if err != nil {
			return 0, err
		}
		sum += uint64(n)
		if err := check(fn, "locals", sum, d.lim.Locals); err != nil {
			return 0, err
		}
		if err := b.valType(); err != nil {
			return 0, err
		}
	}
	return uint32(sum), nil
}

// dataSection reads the data segments; their bytes must be present.
func (d *shapeDecoder) dataSection(s *reader) error {
	n, err := s.count("the data section", "data segments", 2, d.lim.DataSegments)
	if err != nil {
		return err
	}
	d.shape.DataSegments = int(n)
	for i := range n {
		flags, err := s.u32()
		if err != nil {
			return err
		}
		switch flags {
		case 0, 2:
			if flags == 2 {
				if _, err := s.u32(); err != nil {
					return err
				}
			}
			if err := s.skipConstExpr(); err != nil {
				return err
			}
		case 1:
		default:
			return fmt.Errorf("data segment %d: unknown encoding %d", i, flags)
		}
		size, err := s.u32()
		if err != nil {
			return err
		}
		if _, err := s.bytes(size); err != nil {
			return fmt.Errorf("data segment %d: %w", i, err)
		}
	}
	return nil
}

// tagSection reads the exception tags (attribute byte, type index).
func (d *shapeDecoder) tagSection(s *reader) error {
	n, err := s.count("the tag section", "tags", 2, d.lim.Tags)
	if err != nil {
		return err
	}
	for range n {
		if _, err := s.byte(); err != nil {
			return err
		}
		if _, err := s.u32(); err != nil {
			return err
		}
	}
	return nil
}

// customSection checks a custom section's name and, for the "name"
// section, every count and string of the subsections wazero decodes.
func (d *shapeDecoder) customSection(s *reader) error {
	name, err := s.name()
	if err != nil {
		return fmt.Errorf("custom section name: %w", err)
	}
	if name != "name" {
		return nil
	}
	for s.off < len(s.b) {
		id, err := s.byte()
		if err != nil {
			return err
		}
		size, err := s.u32()
		if err != nil {
			return err
		}
		body, err := s.bytes(size)
		if err != nil {
			return fmt.Errorf("name section: subsection %d: %w", id, err)
		}
		sub := &reader{b: body}
		switch id {
		case 0:
			_, err = sub.name()
		case 1:
			err = sub.nameMap("the function names", d.lim.Functions)
		case 2:
			err = d.localNames(sub)
		}
		if err != nil {
			return fmt.Errorf("name section: %w", err)
		}
	}
	return nil
}

// localNames reads the local names subsection: per function, a name map.
func (d *shapeDecoder) localNames(s *reader) error {
	n, err := s.count("the local names", "functions", 2, d.lim.Functions)
	if err != nil {
		return err
	}
	for range n {
		if _, err := s.u32(); err != nil {
			return err
		}
		if err := s.nameMap("the local names of a function", satAdd(d.lim.Locals, d.lim.Params)); err != nil {
			return err
		}
	}
	return nil
}

// nameMap reads a vector of (index, name) pairs.
func (r *reader) nameMap(where string, maxV uint32) error {
	n, err := r.count(where, "names", 2, maxV)
	if err != nil {
		return err
	}
	for range n {
		if _, err := r.u32(); err != nil {
			return err
		}
		if _, err := r.name(); err != nil {
			return err
		}
	}
	return nil
}
