;; imports_unknown_kernel imports a function "extism:host/env" does not have.
(module
  (import "extism:host/env" "spawn_process" (func $spawn (result i32)))
  (func (export "run") (result i32) (call $spawn)))
