;; bad_import.wat: imports a function the host does not provide.
(module
  (import "evil" "escape" (func $escape))
  (func (export "run") (result i32) (call $escape) (i32.const 0)))
