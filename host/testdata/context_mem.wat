;; context_mem.wat: a plugin that keeps state in its session's context
;; (extism:host/user context_set / context_get); each export outputs the host
;; function's JSON reply. Build: wat2wasm context_mem.wat -o context_mem.wasm
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/user" "context_get" (func $get (param i64) (result i64)))
  (import "extism:host/user" "context_set" (func $set (param i64) (result i64)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"key\":\"k\",\"value\":\"remembered\"}")
  (data (i32.const 64) "{\"key\":\"k\"}")

  ;; $block copies $len bytes at $ptr of linear memory into a new Extism block.
  (func $block (param $ptr i32) (param $len i32) (result i64)
    (local $b i64) (local $i i32)
    (local.set $b (call $alloc (i64.extend_i32_u (local.get $len))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (call $store_u8 (i64.add (local.get $b) (i64.extend_i32_u (local.get $i)))
          (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $b))

  ;; $reply makes the host function's reply block the call's output.
  (func $reply (param $r i64)
    (call $output_set (local.get $r) (call $length (local.get $r))))

  (func (export "remember") (result i32)
    (call $reply (call $set (call $block (i32.const 0) (i32.const 32))))
    (i32.const 0))

  (func (export "recall") (result i32)
    (call $reply (call $get (call $block (i32.const 64) (i32.const 11))))
    (i32.const 0)))
