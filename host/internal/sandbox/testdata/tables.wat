;; tables.wat: a table the guest grows, and WASI exits.
;; Build: wat2wasm tables.wat -o tables.wasm (see Makefile).
(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 1)
  ;; No declared maximum, as Go's wasip1 modules: the host supplies one.
  (table $t 0 funcref)

  ;; tgrow: grows the table by 16M entries (128 MiB of host memory) 8 times,
  ;; 1 GiB in all; traps as soon as a growth is refused.
  (func (export "tgrow") (result i32)
    (local $i i32)
    (loop $more
      (if (i32.eq (table.grow $t (ref.null func) (i32.const 16777216)) (i32.const -1))
        (then (unreachable)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $more (i32.lt_u (local.get $i) (i32.const 8))))
    (i32.const 0))

  ;; tgrow_fit: grows the table by 1000 entries (8000 bytes); traps if refused.
  (func (export "tgrow_fit") (result i32)
    (if (i32.eq (table.grow $t (ref.null func) (i32.const 1000)) (i32.const -1))
      (then (unreachable)))
    (i32.const 0))

  ;; bye: sets the output "bye" and returns $code, without returning.
  (func $bye (param $code i32)
    (local $p i64)
    (local.set $p (call $alloc (i64.const 3)))
    (call $store_u8 (local.get $p) (i32.const 98))
    (call $store_u8 (i64.add (local.get $p) (i64.const 1)) (i32.const 121))
    (call $store_u8 (i64.add (local.get $p) (i64.const 2)) (i32.const 101))
    (call $output_set (local.get $p) (i64.const 3))
    (call $proc_exit (local.get $code)))

  ;; exit0: sets the output "bye", then WASI proc_exit(0).
  (func (export "exit0") (result i32)
    (call $bye (i32.const 0))
    (i32.const 0))

  ;; exit3: sets the output "bye", then WASI proc_exit(3).
  (func (export "exit3") (result i32)
    (call $bye (i32.const 3))
    (i32.const 0))

  ;; ok: outputs "ok".
  (func (export "ok") (result i32)
    (local $p i64)
    (local.set $p (call $alloc (i64.const 2)))
    (call $store_u8 (local.get $p) (i32.const 111))
    (call $store_u8 (i64.add (local.get $p) (i64.const 1)) (i32.const 107))
    (call $output_set (local.get $p) (i64.const 2))
    (i32.const 0)))
