;; input_tail.wat: reads its input byte by byte past its end.
;; Build: wat2wasm input_tail.wat -o input_tail.wasm (see Makefile).
(module
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 1)

  ;; input_tail: the input bytes at offsets 0..15 each plus 65 ('A'), whatever
  ;; the input's length: past its end Extism's kernel reads 0.
  (func (export "input_tail") (result i32)
    (local $p i64) (local $i i64)
    (local.set $p (call $alloc (i64.const 16)))
    (block $done
      (loop $each
        (br_if $done (i64.ge_u (local.get $i) (i64.const 16)))
        (call $store_u8 (i64.add (local.get $p) (local.get $i))
          (i32.add (i32.const 65) (call $input_load_u8 (local.get $i))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $each)))
    (call $output_set (local.get $p) (i64.const 16))
    (i32.const 0))
)
