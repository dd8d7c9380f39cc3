;; A module that breaks three rules at once, for Validate's tests: it
;; imports a function no host provides, declares 40 pages (2.5 MiB) of
;; memory against a 1 MiB limit, and does not export the function "nope"
;; its manifest names. Build: wat2wasm odd.wat -o odd.wasm
(module
  (import "env" "evil" (func $evil))
  (memory (export "memory") 40 80)
  (func (export "run") (result i32)
    i32.const 0))
