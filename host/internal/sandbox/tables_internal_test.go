package sandbox

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tetratelabs/wazero"
)

func ptr(v uint32) *uint32 { return &v }

// TestTableLimits: the tables of a module share cap/8 entries; minimums
// over it are refused, and every table gets a maximum within it.
func TestTableLimits(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20 // 131072 entries
	tests := []struct {
		name    string
		tables  []TableInfo
		want    []uint32
		wantErr bool
	}{
		{"no table", nil, nil, false},
		{"no maximum gets the budget", []TableInfo{{Min: 100}}, []uint32{131072}, false},
		{"smaller maximum kept", []TableInfo{{Min: 100, Max: ptr(200)}}, []uint32{200}, false},
		{"larger maximum lowered", []TableInfo{{Min: 100, Max: ptr(1 << 27)}}, []uint32{131072}, false},
		{"minimum exactly the budget", []TableInfo{{Min: 131072}}, []uint32{131072}, false},
		{"minimum over the budget", []TableInfo{{Min: 131073}}, nil, true},
		{"headroom split between tables", []TableInfo{{Min: 2}, {Min: 0, Max: ptr(10)}, {Min: 0}},
			[]uint32{2 + 131070/3, 10, 131070 / 3}, false},
		{"minimums summed", []TableInfo{{Min: 131072}, {Min: 1}}, nil, true},
		{"minimums summed without overflow", []TableInfo{{Min: 1<<32 - 1}, {Min: 1<<32 - 1}}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tableLimits(tt.tables, mib)
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrInvalidModule)) {
				t.Fatalf("tableLimits error = %v, want error %v (ErrInvalidModule)", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("maximums (-want +got):\n%s", diff)
			}
		})
	}
}

// tableModule is a module with two tables: a funcref table with an
// initializer expression (function references form) and no maximum, and an
// externref table with a maximum of 2^20; then an export "f".
var tableModule = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type section: () -> ()
	0x03, 0x02, 0x01, 0x00, // function section: f
	0x04, 0x0f, 0x02, // table section, 2 tables
	0x40, 0x00, 0x70, 0x00, 0x02, 0xd0, 0x70, 0x0b, // (table 2 funcref (ref.null func))
	0x6f, 0x01, 0x01, 0x80, 0x80, 0x40, // (table 1 1048576 externref)
	0x07, 0x05, 0x01, 0x01, 'f', 0x00, 0x00, // export "f"
	0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b, // code: f is empty
}

// TestWithTableMaximums: the rewritten module declares the effective
// maximums, keeps everything else, and still compiles in wazero.
func TestWithTableMaximums(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	info, err := Inspect(ctx, tableModule)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]TableInfo{{Min: 2}, {Min: 1, Max: ptr(1 << 20)}}, info.Tables); diff != "" {
		t.Fatalf("declared tables (-want +got):\n%s", diff)
	}
	maxes, err := tableLimits(info.Tables, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	out, err := withTableMaximums(tableModule, info.Tables, maxes)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Inspect(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	share := uint32((1<<17 - 3) / 2)
	want := info
	want.Tables = []TableInfo{{Min: 2, Max: ptr(2 + share)}, {Min: 1, Max: ptr(1 + share)}}
	want.Size = len(out)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rewritten module (-want +got):\n%s", diff)
	}
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	if _, err := r.CompileModule(ctx, out); err != nil {
		t.Errorf("wazero refuses the rewritten module: %v", err)
	}

	same, err := withTableMaximums(out, got.Tables, maxes)
	if err != nil || &same[0] != &out[0] {
		t.Errorf("a module already within its maximums was copied or failed (err %v)", err)
	}
}
