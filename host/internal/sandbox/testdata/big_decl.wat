;; big_decl.wat: declares 65536 pages (4 GiB) of minimum memory; must be refused at load.
(module
  (memory (export "memory") 65536)
  (func (export "run") (result i32) (i32.const 0)))
