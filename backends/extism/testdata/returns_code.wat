;; returns_code returns 7 without setting an error.
(module
  (func (export "run") (result i32) (i32.const 7)))
