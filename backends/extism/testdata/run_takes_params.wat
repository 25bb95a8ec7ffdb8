;; run_takes_params exports run with a parameter, which no host passes.
(module
  (func (export "run") (param i32) (result i32) (local.get 0)))
