;; no_run exports no function named run.
(module
  (func (export "main") (result i32) (i32.const 0)))
