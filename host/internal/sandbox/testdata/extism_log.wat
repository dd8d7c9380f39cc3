;; extism_log.wat: logs through Extism's own log functions (extism:host/env).
;; "levels" logs its input at debug, info, warn and error; "flood" logs
;; "flood!!!" 1000 times at info (wat2wasm extism_log.wat).
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u64" (func $store_u64 (param i64 i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "log_debug" (func $log_debug (param i64)))
  (import "extism:host/env" "log_info" (func $log_info (param i64)))
  (import "extism:host/env" "log_warn" (func $log_warn (param i64)))
  (import "extism:host/env" "log_error" (func $log_error (param i64)))
  (memory (export "memory") 1)

  ;; copy returns a new block holding a copy of the input.
  (func $copy (result i64)
    (local $n i64) (local $off i64) (local $i i64)
    (local.set $n (call $input_length))
    (local.set $off (call $alloc (local.get $n)))
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (call $store_u8 (i64.add (local.get $off) (local.get $i)) (call $input_load_u8 (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $next)))
    (local.get $off))

  (func (export "levels") (result i32)
    (call $log_debug (call $copy))
    (call $log_info (call $copy))
    (call $log_warn (call $copy))
    (call $log_error (call $copy))
    (i32.const 0))

  (func (export "flood") (result i32)
    (local $i i32) (local $off i64)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (i32.const 1000)))
        (local.set $off (call $alloc (i64.const 8)))
        (call $store_u64 (local.get $off) (i64.const 0x212121646f6f6c66)) ;; "flood!!!" little-endian
        (call $log_info (local.get $off))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.const 0)))
