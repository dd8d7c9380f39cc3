;; A module whose imports show every status plugin inspect reports: fd_write
;; twice (shown once), provided WASI and skillhost functions, Extism's own
;; HTTP (refused by design), and a host function and a module nobody
;; provides (unknown). Build: wat2wasm imports.wat -o imports.wasm
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $w1 (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $w2 (param i32 i32 i32 i32) (result i32)))
  (import "extism:host/user" "log" (func $log (param i64) (result i64)))
  (import "extism:host/env" "http_request" (func $http (param i64 i64) (result i64)))
  (import "extism:host/user" "launch_missiles" (func $nope (param i64) (result i64)))
  (import "env" "abort" (func $abort (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (func (export "run") (result i32) (i32.const 0)))
