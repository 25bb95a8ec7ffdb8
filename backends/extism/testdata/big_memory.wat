;; big_memory declares a minimum memory of 200 pages (12.5 MiB).
(module
  (memory 200)
  (func (export "run") (result i32) (i32.const 0)))
