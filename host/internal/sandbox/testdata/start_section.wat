;; start_section.wat: a start function (run at instantiation) that never returns.
(module
  (memory (export "memory") 1)
  (func $spin (loop $forever (br $forever)))
  (start $spin)
  (func (export "run") (result i32) (i32.const 0)))
