;; nap.wat: an Extism plugin whose one export, nap, sleeps 10 ms per byte of
;; its input (through WASI poll_oneoff, so the call's deadline or a cancel
;; interrupts it) and then returns the input: a call of a known length that
;; completes. Build: wat2wasm nap.wat -o nap.wasm
(module
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory (export "memory") 1)

  ;; sleep10ms: one relative clock subscription of 10 ms (the subscription
  ;; at 64, its event at 128, the event count at 192).
  (func $sleep10ms
    (i64.store (i32.const 64) (i64.const 0))         ;; userdata
    (i32.store8 (i32.const 72) (i32.const 0))        ;; tag: clock
    (i32.store (i32.const 80) (i32.const 1))         ;; clock id: monotonic
    (i64.store (i32.const 88) (i64.const 10000000))  ;; timeout: 10 ms
    (i64.store (i32.const 96) (i64.const 0))         ;; precision
    (i32.store16 (i32.const 104) (i32.const 0))      ;; flags: relative
    (drop (call $poll (i32.const 64) (i32.const 128) (i32.const 1) (i32.const 192))))

  (func (export "nap") (result i32)
    (local $n i64) (local $p i64) (local $i i64)
    (local.set $n (call $input_length))
    (block $rested
      (loop $rest
        (br_if $rested (i64.ge_u (local.get $i) (local.get $n)))
        (call $sleep10ms)
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $rest)))
    (local.set $p (call $alloc (local.get $n)))
    (local.set $i (i64.const 0))
    (block $done
      (loop $copy
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (call $store_u8 (i64.add (local.get $p) (local.get $i)) (call $input_load_u8 (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $copy)))
    (call $output_set (local.get $p) (local.get $n))
    (i32.const 0)))
