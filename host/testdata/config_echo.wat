;; config_echo.wat: a plugin whose "get" export outputs its config value
;; api_key (extism:host/env config_get, the Extism config the host builds from
;; permissions.config and the operator's plugins.<name> settings) as a JSON
;; string, or null when it has none. The value must need no JSON escaping.
;; Build: wat2wasm config_echo.wat -o config_echo.wasm
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "load_u8" (func $load_u8 (param i64) (result i32)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (import "extism:host/env" "config_get" (func $config_get (param i64) (result i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 1)
  (data (i32.const 0) "api_key")
  (data (i32.const 16) "null")

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

  (func (export "get") (result i32)
    (local $v i64) (local $n i64) (local $out i64) (local $i i64)
    (local.set $v (call $config_get (call $block (i32.const 0) (i32.const 7))))
    (if (i64.eqz (local.get $v))
      (then
        (local.set $out (call $block (i32.const 16) (i32.const 4)))
        (call $output_set (local.get $out) (i64.const 4))
        (return (i32.const 0))))
    ;; out = '"' + value + '"'
    (local.set $n (call $length (local.get $v)))
    (local.set $out (call $alloc (i64.add (local.get $n) (i64.const 2))))
    (call $store_u8 (local.get $out) (i32.const 34))
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (call $store_u8 (i64.add (i64.add (local.get $out) (i64.const 1)) (local.get $i))
          (call $load_u8 (i64.add (local.get $v) (local.get $i))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $next)))
    (call $store_u8 (i64.add (i64.add (local.get $out) (i64.const 1)) (local.get $n)) (i32.const 34))
    (call $output_set (local.get $out) (i64.add (local.get $n) (i64.const 2)))
    (i32.const 0)))
