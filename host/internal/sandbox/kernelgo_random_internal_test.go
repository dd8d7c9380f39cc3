package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tetratelabs/wazero/api"
)

// TestKernelInGoMatchesKernelRandomly: seeded random sequences of a few
// thousand kernel operations (allocations of 0 to 200 KB, frees of live
// and bogus pointers, lengths, setters, readers, byte and u64 stores into
// the blocks' headers and data, resets) give the same results and memory
// in Go as in the kernel after every operation. A third instance runs each
// operation in the kernel or in Go at random, as go-sdk's own host
// functions (which call the kernel's wasm) mix with the guest's on one
// memory, and must end with the same memory too.
func TestKernelInGoMatchesKernelRandomly(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 22))
			p := newKernelPair(t)
			mixed, _ := newFastCall(mustInstance(t, mustCompiled(t)))
			memW := p.wasm.kernel.Memory()
			var live []uint64
			pick := func() uint64 {
				if len(live) > 0 && rng.IntN(10) < 7 {
					return live[rng.IntN(len(live))]
				}
				return rng.Uint64N(uint64(memW.Size()) + 200)
			}
			var grew, reused int
			ops := make([]kop, 0, 3000)
			for range cap(ops) {
				var o kop
				switch r := rng.IntN(100); {
				case r < 40:
					n := rng.Uint64N(512)
					switch rng.IntN(10) {
					case 0:
						n = rng.Uint64N(200 << 10)
					case 1, 2:
						n = rng.Uint64N(16 << 10)
					}
					o = op("alloc", n)
				case r < 63:
					o = op("free", pick())
				case r < 72:
					o = op([]string{"length", "length_unsafe"}[rng.IntN(2)], pick())
				case r < 80:
					o = op([]string{"input_set", "output_set"}[rng.IntN(2)], pick(), rng.Uint64N(1<<12))
				case r < 83:
					o = op("error_set", []uint64{0, pick()}[rng.IntN(2)])
				case r < 90:
					name := []string{"input_length", "input_offset", "output_length", "output_offset",
						"error_get", "memory_bytes", "input_load_u8", "load_u8", "load_u64"}[rng.IntN(9)]
					o = op(name)
					if name == "input_load_u8" || name == "load_u8" || name == "load_u64" {
						o = op(name, pick()+rng.Uint64N(16))
					}
				case r < 99:
					// Bytes below 0x80 only: a header's size stays under
					// 2^31, so no walk wraps into a loop (that case has a
					// test of its own).
					if rng.IntN(2) == 0 {
						o = op("store_u8", pick()-rng.Uint64N(13), rng.Uint64N(0x80))
					} else {
						o = op("store_u64", pick()-rng.Uint64N(13), rng.Uint64()&0x7f7f7f7f7f7f7f7f)
					}
				default:
					o = op("reset")
				}
				// Run op by op to learn the pointers the kernel hands out.
				size, pos := memW.Size(), rootField(memW, rootPosition)
				res := p.run(t, []kop{o})[0]
				var ptr uint64
				if o.name == "alloc" {
					if _, err := fmt.Sscanf(res, "[%d]", &ptr); err == nil && ptr != 0 {
						live = append(live, ptr)
						if ptr != pos+firstBlock+blockHeader {
							reused++
						}
					}
				}
				if memW.Size() > size {
					grew++
				}
				if o.name == "reset" {
					live = live[:0]
				}
				ops = append(ops, o)
				// The mixed instance: the same op, in the kernel or in Go.
				f := mixed.kernel.Module.ExportedFunction(o.name)
				if rng.IntN(2) == 0 {
					f = mixed.kernel.ExportedFunction(o.name)
				}
				if got := callOp(context.Background(), f, o); got != res {
					t.Fatalf("mixed instance: %v = %s, want %s", o, got, res)
				}
			}
			bw, _ := memW.Read(0, memW.Size())
			bm, _ := mixed.kernel.Memory().Read(0, mixed.kernel.Memory().Size())
			if !bytes.Equal(bw, bm) {
				t.Error("the mixed instance's kernel memory differs from the kernel's")
			}
			t.Logf("%d ops: %d grew the memory (to %d bytes), %d allocations reused a block", len(ops), grew, memW.Size(), reused)
			if grew == 0 || reused == 0 {
				t.Errorf("the sequence grew the memory %d times and reused %d blocks: it must do both", grew, reused)
			}
		})
	}
}

// rootField reads the MemoryRoot field at addr, 0 if the memory is empty.
func rootField(mem api.Memory, addr uint32) uint64 {
	v, _ := mem.ReadUint64Le(addr)
	return v
}

// TestKernelInGoStopsALoopingBlockList: a guest that rewrites a block's
// header (store_u64 reaches every byte past the MemoryRoot) so that the
// block list loops makes the kernel's walk spin until the call's deadline;
// the Go walk ends with an error instead, even without a deadline, and
// stops at once on a context that has ended.
func TestKernelInGoStopsALoopingBlockList(t *testing.T) {
	t.Parallel()
	p := newKernelPair(t)
	ctx := context.Background()
	// Two blocks that leave the bump allocator short of room for 6000
	// bytes, and the first block's size made 2^32-12: its next block is
	// itself, in the kernel's 32-bit arithmetic.
	for _, o := range []kop{op("reset"), op("alloc", 100), op("alloc", 60000),
		op("store_u64", firstBlock, uint64(1<<32-blockHeader)<<32|blockActive)} {
		if _, err := p.inGo(t, o.name).Call(ctx, o.params...); err != nil {
			t.Fatalf("%v: %v", o, err)
		}
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		op   kop
		want string
	}{
		{"length", ctx, op("length", 300), "block list loops"},
		{"free", ctx, op("free", 300), "block list loops"},
		{"alloc out of room", ctx, op("alloc", 6000), "block list loops"},
		{"length, context ended", ended, op("length", 300), "context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.inGo(t, tt.op.name).Call(tt.ctx, tt.op.params...)
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tt.want)) {
				t.Errorf("%v: %v, want an error with %q", tt.op, err, tt.want)
			}
		})
	}
	if diff := cmp.Diff("[0] <nil>", callOp(ctx, p.inGo(t, "length_unsafe"), op("length_unsafe", 1))); diff != "" {
		t.Errorf("length_unsafe, which does not walk (-want +got):\n%s", diff)
	}
}
