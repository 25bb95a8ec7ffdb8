;; imports_env imports from a module the host does not provide.
(module
  (import "env" "secret" (func $secret (result i32)))
  (func (export "run") (result i32) (call $secret)))
