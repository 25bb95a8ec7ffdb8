;; traps executes unreachable.
(module
  (func (export "run") (result i32) unreachable))
