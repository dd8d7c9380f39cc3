;; burn.wat: a slow-but-successful step for plan tests.
;; burn: reads the decimal digits of its input as N (every other byte is
;; ignored, so {"n":1000} gives 1000), spins N iterations, then echoes the input.
;; Build: wat2wasm burn.wat -o burn.wasm (see Makefile).
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 1)
  (global $sink (mut i64) (i64.const 0))

  (func (export "burn") (result i32)
    (local $n i64) (local $i i64) (local $c i32) (local $count i64) (local $p i64)
    (local.set $n (call $input_length))
    ;; parse the digits
    (block $parsed
      (loop $digits
        (br_if $parsed (i64.ge_u (local.get $i) (local.get $n)))
        (local.set $c (call $input_load_u8 (local.get $i)))
        (if (i32.and (i32.ge_u (local.get $c) (i32.const 48)) (i32.le_u (local.get $c) (i32.const 57)))
          (then (local.set $count
            (i64.add (i64.mul (local.get $count) (i64.const 10))
                     (i64.extend_i32_u (i32.sub (local.get $c) (i32.const 48)))))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $digits)))
    ;; spin
    (local.set $i (i64.const 0))
    (block $spun
      (loop $spin
        (br_if $spun (i64.ge_u (local.get $i) (local.get $count)))
        (global.set $sink (i64.add (global.get $sink) (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $spin)))
    ;; echo the input
    (local.set $p (call $alloc (local.get $n)))
    (local.set $i (i64.const 0))
    (block $done
      (loop $copy
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (call $store_u8 (i64.add (local.get $p) (local.get $i)) (call $input_load_u8 (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $copy)))
    (call $output_set (local.get $p) (local.get $n))
    (i32.const 0))
)
