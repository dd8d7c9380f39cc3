;; A hand-written plugin for plugin test's tests: "nothing" succeeds with no
;; output (callers get null), "text" outputs text that is not JSON (callers
;; get a JSON string), and "chatty" also logs through Extism's log_info and
;; reports progress through skillhost's progress host function.
;; Build: wat2wasm plain.wat -o plain.wasm
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "free" (func $free (param i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "log_info" (func $log_info (param i64)))
  (import "extism:host/user" "progress" (func $progress (param i64) (result i64)))
  (memory (export "memory") 1)
  (data (i32.const 0) "plain text")
  (data (i32.const 16) "from log_info")
  (data (i32.const 32) "{\"percent\":50,\"message\":\"half way\"}")

  ;; $block copies $len bytes at $ptr into a new Extism memory block.
  (func $block (param $ptr i32) (param $len i32) (result i64)
    (local $off i64) (local $i i32)
    (local.set $off (call $alloc (i64.extend_i32_u (local.get $len))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (call $store_u8 (i64.add (local.get $off) (i64.extend_i32_u (local.get $i)))
          (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $off))

  (func (export "nothing") (result i32) (i32.const 0))

  (func (export "text") (result i32)
    (call $output_set (call $block (i32.const 0) (i32.const 10)) (i64.const 10))
    (i32.const 0))

  (func (export "chatty") (result i32)
    (local $req i64)
    (call $log_info (call $block (i32.const 16) (i32.const 13)))
    (local.set $req (call $block (i32.const 32) (i32.const 35)))
    (call $free (call $progress (local.get $req)))
    (call $free (local.get $req))
    (call $output_set (call $block (i32.const 0) (i32.const 10)) (i64.const 10))
    (i32.const 0)))
