;; relay.wat: a plugin whose "call" export calls another agent through the
;; host function extism:host/user.agent_call. The request is the config value
;; request_prefix (e.g. {"agent":"tools","method":"echo","params":), then the
;; call's input, then "}"; the output is agent_call's reply envelope as is
;; ({"ok":true,"result":…} or {"ok":false,"error":…}). A relay whose prefix
;; names a relay on another host bounces a call back and forth.
;; Build: wat2wasm relay.wat -o relay.wasm (see Makefile).
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (import "extism:host/env" "load_u8" (func $load_u8 (param i64) (result i32)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "config_get" (func $config_get (param i64) (result i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/user" "agent_call" (func $agent_call (param i64) (result i64)))

  (memory (export "memory") 1)
  (data (i32.const 0) "request_prefix")

  (func (export "call") (result i32)
    (local $key i64) (local $pre i64) (local $pn i64) (local $n i64) (local $req i64) (local $i i64) (local $reply i64)
    ;; the config key as an Extism block
    (local.set $key (call $alloc (i64.const 14)))
    (block $kd
      (loop $kc
        (br_if $kd (i64.ge_u (local.get $i) (i64.const 14)))
        (call $store_u8 (i64.add (local.get $key) (local.get $i)) (i32.load8_u (i32.wrap_i64 (local.get $i))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $kc)))
    (local.set $pre (call $config_get (local.get $key)))
    (if (i64.eqz (local.get $pre)) (then (return (i32.const 1))))
    (local.set $pn (call $length (local.get $pre)))
    (local.set $n (call $input_length))
    ;; request = prefix + input + "}"
    (local.set $req (call $alloc (i64.add (i64.add (local.get $pn) (local.get $n)) (i64.const 1))))
    (local.set $i (i64.const 0))
    (block $pd
      (loop $pc
        (br_if $pd (i64.ge_u (local.get $i) (local.get $pn)))
        (call $store_u8 (i64.add (local.get $req) (local.get $i)) (call $load_u8 (i64.add (local.get $pre) (local.get $i))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $pc)))
    (local.set $i (i64.const 0))
    (block $id
      (loop $ic
        (br_if $id (i64.ge_u (local.get $i) (local.get $n)))
        (call $store_u8 (i64.add (i64.add (local.get $req) (local.get $pn)) (local.get $i)) (call $input_load_u8 (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $ic)))
    (call $store_u8 (i64.add (i64.add (local.get $req) (local.get $pn)) (local.get $n)) (i32.const 125))
    (local.set $reply (call $agent_call (local.get $req)))
    (if (i64.eqz (local.get $reply)) (then (return (i32.const 1))))
    (call $output_set (local.get $reply) (call $length (local.get $reply)))
    (i32.const 0)))
