package sandbox

import (
	"errors"
	"fmt"
)

// TableInfo describes one table of a module, in index order (imported
// tables first, as in the wasm table index space).
type TableInfo struct {
	// Min is the declared minimum number of entries (allocated at instantiation).
	Min uint32
	// Max is the declared maximum, nil when the module declares none.
	Max *uint32
	// Imported is true for a table imported from another module (the host
	// provides none, so Load refuses such a module).
	Imported bool
}

// tableEntryBytes is what one table entry costs the host: wazero stores a
// table as a Go []uintptr (internal/wasm.Reference), allocated in Go memory
// that the memory meter does not see. 8 is exact on 64-bit hosts and
// conservative on 32-bit ones.
const tableEntryBytes = 8

// tableLimits decides the effective maximum of every table of a module whose
// memory cap is capBytes. The tables of an instance share a budget of
// capBytes/8 entries: a module whose declared minimums exceed it is refused
// (they are allocated at instantiation); the headroom left after the
// minimums is split evenly between the tables, and each table's maximum is
// lowered to its minimum plus its share (a table without a declared maximum
// gets one). table.grow past the effective maximum fails with -1, as
// memory.grow past the memory cap does.
func tableLimits(tables []TableInfo, capBytes uint64) ([]uint32, error) {
	budget := capBytes / tableEntryBytes
	var total uint64
	for i, t := range tables {
		total += uint64(t.Min)
		if total > budget {
			return nil, fmt.Errorf("%w: table %d declares a minimum of %d entries; the tables of a module may hold at most %d entries "+
				"(%d bytes an entry within the memory cap of %s)", ErrInvalidModule, i, t.Min, budget, tableEntryBytes, formatBytes(capBytes))
		}
	}
	if len(tables) == 0 {
		return nil, nil
	}
	share := (budget - total) / uint64(len(tables))
	maxes := make([]uint32, len(tables))
	for i, t := range tables {
		limit := min(uint64(t.Min)+share, 1<<32-1)
		if t.Max != nil {
			limit = min(limit, uint64(*t.Max))
		}
		maxes[i] = uint32(limit)
	}
	return maxes, nil
}

// withTableMaximums returns wasm with the maximum of each table defined in
// its table section set to maxes[imported+i]. The result is a new slice;
// wasm is not modified. Tables already at their effective maximum are left
// as they are, and a module needing no change is returned as is.
func withTableMaximums(wasm []byte, tables []TableInfo, maxes []uint32) ([]byte, error) {
	changed := false
	for i, t := range tables {
		if !t.Imported && (t.Max == nil || *t.Max != maxes[i]) {
			changed = true
		}
	}
	if !changed {
		return wasm, nil
	}
	imported := 0
	for _, t := range tables {
		if t.Imported {
			imported++
		}
	}
	r := &reader{b: wasm, off: len(wasmHeader)}
	for r.off < len(r.b) {
		start := r.off
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		body, err := r.bytes(size)
		if err != nil {
			return nil, err
		}
		if id != secTable {
			continue
		}
		nb, err := rewriteTableSection(body, maxes[imported:])
		if err != nil {
			return nil, fmt.Errorf("section %d: %w", id, err)
		}
		out := make([]byte, 0, len(wasm)+len(maxes)*6)
		out = append(out, wasm[:start]...)
		out = append(out, secTable)
		out = appendU32(out, uint32(len(nb)))
		out = append(out, nb...)
		return append(out, wasm[r.off:]...), nil
	}
	return nil, errors.New("table section not found")
}

// rewriteTableSection re-encodes a table section body with maxes as the
// tables' maximums, keeping everything else byte for byte.
func rewriteTableSection(body []byte, maxes []uint32) ([]byte, error) {
	s := &reader{b: body}
	n, err := s.u32()
	if err != nil {
		return nil, err
	}
	if int(n) != len(maxes) {
		return nil, fmt.Errorf("table count changed: %d, want %d", n, len(maxes))
	}
	out := make([]byte, 0, len(body)+len(maxes)*6)
	out = append(out, body[:s.off]...)
	for i := range n {
		start := s.off
		tt, err := s.tableType()
		if err != nil {
			return nil, err
		}
		out = append(out, body[start:tt.flagsAt]...)
		out = append(out, body[tt.flagsAt]|0x01)
		out = append(out, body[tt.flagsAt+1:tt.maxAt]...)
		out = appendU32(out, maxes[i])
		out = append(out, body[tt.limitsEnd:s.off]...)
	}
	return append(out, body[s.off:]...), nil
}

// appendU32 appends v as an unsigned LEB128.
func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// tableType is a decoded table type and where its limits sit in the reader.
type tableType struct {
	info      TableInfo
	flagsAt   int // offset of the limits flags byte
	maxAt     int // offset of the maximum (where it would go when absent)
	limitsEnd int // offset just past the limits
}

// tableType reads a table type: [0x40 0x00] reftype limits [const expr].
// The 0x40 form (function references) carries an initializer expression.
func (r *reader) tableType() (tableType, error) {
	var tt tableType
	b, err := r.byte()
	if err != nil {
		return tt, err
	}
	withInit := b == 0x40
	if withInit {
		if b, err = r.byte(); err != nil {
			return tt, err
		}
		if b != 0x00 {
			return tt, fmt.Errorf("table: expected 0x00 after 0x40, got 0x%02x", b)
		}
		if b, err = r.byte(); err != nil {
			return tt, err
		}
	}
	if err := r.refTypeRest(b); err != nil {
		return tt, err
	}
	tt.flagsAt = r.off
	flags, err := r.byte()
	if err != nil {
		return tt, err
	}
	if flags&^0x01 != 0 {
		return tt, fmt.Errorf("unsupported table limits flags 0x%02x (shared or 64-bit table)", flags)
	}
	if tt.info.Min, err = r.u32(); err != nil {
		return tt, err
	}
	tt.maxAt = r.off
	if flags&0x01 != 0 {
		m, err := r.u32()
		if err != nil {
			return tt, err
		}
		if m < tt.info.Min {
			return tt, fmt.Errorf("table maximum %d is below its minimum %d", m, tt.info.Min)
		}
		tt.info.Max = &m
	}
	tt.limitsEnd = r.off
	if withInit {
		if err := r.skipConstExpr(); err != nil {
			return tt, err
		}
	}
	return tt, nil
}

// Value and reference type bytes.
const (
	refNullable    = 0x63 // (ref null ht)
	refNonNullable = 0x64 // (ref ht)
)

// refTypeRest finishes reading a value type whose first byte is b: the
// (ref null? ht) forms carry a heap type (s33), the rest are one byte.
func (r *reader) refTypeRest(b byte) error {
	if b == refNullable || b == refNonNullable {
		return r.skipLEB(5)
	}
	return nil
}

// skipLEB skips a LEB128 integer of at most n bytes.
func (r *reader) skipLEB(n int) error {
	for range n {
		c, err := r.byte()
		if err != nil {
			return err
		}
		if c&0x80 == 0 {
			return nil
		}
	}
	return errors.New("LEB128 integer too long")
}

// skipConstExpr skips a constant expression up to and including its end
// opcode. It accepts the opcodes wazero v1.12 accepts there.
func (r *reader) skipConstExpr() error {
	for {
		op, err := r.byte()
		if err != nil {
			return err
		}
		switch op {
		case 0x0b: // end
			return nil
		case 0x41, 0x23, 0xd2: // i32.const, global.get, ref.func
			err = r.skipLEB(5)
		case 0x42: // i64.const
			err = r.skipLEB(10)
		case 0x43: // f32.const
			_, err = r.bytes(4)
		case 0x44: // f64.const
			_, err = r.bytes(8)
		case 0xd0: // ref.null heaptype
			err = r.skipLEB(5)
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended-const add, sub, mul
		case 0xfd: // v128.const
			var sub uint32
			if sub, err = r.u32(); err == nil {
				if sub != 12 {
					return fmt.Errorf("vector opcode %d in a constant expression", sub)
				}
				_, err = r.bytes(16)
			}
		default:
			return fmt.Errorf("opcode 0x%02x in a constant expression", op)
		}
		if err != nil {
			return err
		}
	}
}

// tableSection reads the table section.
func (d *shapeDecoder) tableSection(s *reader, info *ModuleInfo) error {
	n, err := s.countFrom("the module", "tables (imported ones included)", 3, uint64(len(info.Tables)), d.lim.Tables)
	if err != nil {
		return err
	}
	for range n {
		tt, err := s.tableType()
		if err != nil {
			return err
		}
		info.Tables = append(info.Tables, tt.info)
	}
	return nil
}
