;; start_loop.wat: a reactor whose _initialize never returns (run on the first call).
(module
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 1)
  (func (export "_initialize") (loop $forever (br $forever)))
  (func (export "run") (result i32) (i32.const 0)))
