;; hostile.wat: a tiny Extism-compatible plugin with one export per misbehaviour.
;; Build: wat2wasm hostile.wat -o hostile.wasm (see Makefile).
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "input_load_u64" (func $input_load_u64 (param i64) (result i64)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "store_u64" (func $store_u64 (param i64 i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "error_set" (func $error_set (param i64)))

  (memory (export "memory") 1)
  (data (i32.const 0) "{\"message\":\"bad input\",\"code\":\"E_BAD\",\"data\":{\"field\":\"text\"}}")

  ;; echo: copies the input to the output, 8 bytes at a time then the tail.
  (func (export "echo") (result i32)
    (local $n i64) (local $p i64) (local $i i64)
    (local.set $n (call $input_length))
    (local.set $p (call $alloc (local.get $n)))
    (block $done8
      (loop $copy8
        (br_if $done8 (i64.gt_u (i64.add (local.get $i) (i64.const 8)) (local.get $n)))
        (call $store_u64 (i64.add (local.get $p) (local.get $i)) (call $input_load_u64 (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 8)))
        (br $copy8)))
    (block $done
      (loop $copy
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (call $store_u8 (i64.add (local.get $p) (local.get $i)) (call $input_load_u8 (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $copy)))
    (call $output_set (local.get $p) (local.get $n))
    (i32.const 0))

  ;; loop: never returns.
  (func (export "loop") (result i32)
    (loop $forever (br $forever))
    (i32.const 0))

  ;; trap: executes unreachable.
  (func (export "trap") (result i32)
    (unreachable))

  ;; grow: the memory hog; grows 16 pages (1 MiB) at a time until refused, then aborts.
  (func (export "grow") (result i32)
    (loop $more
      (br_if $more (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
    (unreachable))

  ;; grow_huge: one single request for 2 GiB (32768 pages).
  (func (export "grow_huge") (result i32)
    (if (i32.eq (memory.grow (i32.const 32768)) (i32.const -1))
      (then (unreachable)))
    (i32.const 0))

  ;; recurse: unbounded recursion, ends in a stack overflow.
  (func $recurse (export "recurse") (result i32)
    (i32.add (call $recurse) (i32.const 1)))

  ;; huge_output: sets an 8 MiB output (zeros).
  (func (export "huge_output") (result i32)
    (call $output_set (call $alloc (i64.const 8388608)) (i64.const 8388608))
    (i32.const 0))

  ;; fail: reports a structured error through error_set and returns 1.
  (func (export "fail") (result i32)
    (local $p i64) (local $i i32)
    (local.set $p (call $alloc (i64.const 62)))
    (block $done
      (loop $copy
        (br_if $done (i32.ge_u (local.get $i) (i32.const 62)))
        (call $store_u8 (i64.add (local.get $p) (i64.extend_i32_u (local.get $i)))
          (i32.load8_u (local.get $i)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $copy)))
    (call $error_set (local.get $p))
    (i32.const 1))

  ;; fail_text: reports a plain-text error ("nope") and returns 2.
  (func (export "fail_text") (result i32)
    (local $p i64)
    (local.set $p (call $alloc (i64.const 4)))
    (call $store_u8 (local.get $p) (i32.const 110))
    (call $store_u8 (i64.add (local.get $p) (i64.const 1)) (i32.const 111))
    (call $store_u8 (i64.add (local.get $p) (i64.const 2)) (i32.const 112))
    (call $store_u8 (i64.add (local.get $p) (i64.const 3)) (i32.const 101))
    (call $error_set (local.get $p))
    (i32.const 2))
)
