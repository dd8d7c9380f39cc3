;; declares.wat: a small module declaring a few of everything a ShapeLimits
;; field bounds. TestShapeLimitsEachField lowers each limit below what this
;; module declares and expects Inspect to refuse it, naming that limit.
;; Build: wat2wasm declares.wat -o declares.wasm
(module
  (type $t0 (func))
  (type $t1 (func (param i32 i64) (result i32 i64)))
  (type $t2 (func (param i32) (result i32)))
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (table $a 2 funcref)
  (table $b 1 externref)
  (memory (export "memory") 1)
  (global $g0 (mut i32) (i32.const 0))
  (global $g1 (mut i64) (i64.const 0))
  (global $g2 i32 (i32.const 7))
  (elem (table $a) (i32.const 0) func $f0 $f1)
  (elem func $f0 $f1 $f2)
  (data (i32.const 0) "abc")
  (data "passive")
  (func $f0 (type $t0))
  (func $f1 (type $t1) (local i32 i32 i32 f64)
    (local.get 0) (local.get 1))
  (func $f2 (type $t2) (local i64)
    (local.get 0))
  (func (export "run") (result i32)
    (i32.const 0))
  (export "f1" (func $f1))
  (export "g0" (global $g0)))
