;; table_import.wat: imports a table, which the host never provides.
;; Build: wat2wasm table_import.wat -o table_import.wasm (see Makefile).
(module
  (import "env" "table" (table 1 funcref))
  (memory (export "memory") 1)
  (func (export "ok") (result i32) (i32.const 0)))
