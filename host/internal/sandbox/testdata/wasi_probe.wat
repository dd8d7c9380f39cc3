;; wasi_probe.wat: reports what WASI exposes. Output: 3 bytes
;; [environment variable count, argument count, errno of fd_prestat_get(3)]
;; (errno 0 = a preopened directory exists, 8 = EBADF = none).
(module
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $environ_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $args_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_prestat_get" (func $fd_prestat_get (param i32 i32) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 1)
  (func (export "probe") (result i32)
    (local $p i64) (local $errno i32)
    (drop (call $environ_sizes_get (i32.const 0) (i32.const 4)))
    (drop (call $args_sizes_get (i32.const 8) (i32.const 12)))
    (local.set $errno (call $fd_prestat_get (i32.const 3) (i32.const 16)))
    (local.set $p (call $alloc (i64.const 3)))
    (call $store_u8 (local.get $p) (i32.load (i32.const 0)))
    (call $store_u8 (i64.add (local.get $p) (i64.const 1)) (i32.load (i32.const 8)))
    (call $store_u8 (i64.add (local.get $p) (i64.const 2)) (local.get $errno))
    (call $output_set (local.get $p) (i64.const 3))
    (i32.const 0)))
