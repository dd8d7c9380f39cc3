;; table_min.wat: two tables whose declared minimums (allocated at
;; instantiation) total 131073 entries, 1 MiB + 8 bytes of host memory at 8
;; bytes an entry: one entry over the table budget of a 1 MiB memory cap.
;; Build: wat2wasm table_min.wat -o table_min.wasm (see Makefile).
(module
  (memory (export "memory") 1)
  (table 65536 65536 funcref)
  (table 65537 funcref)
  (func (export "ok") (result i32) (i32.const 0)))
