;; memsize: the memory-size pass's test module. Rebuild with go generate.
(module
  (memory (export "memory") 1 8)

  ;; size returns memory.size.
  (func (export "size") (result i32)
    (memory.size))

  ;; grow returns memory.grow n.
  (func (export "grow") (param $n i32) (result i32)
    (memory.grow (local.get $n)))

  ;; store writes v at address a; load reads it.
  (func (export "store") (param $a i32) (param $v i32)
    (i32.store (local.get $a) (local.get $v)))
  (func (export "load") (param $a i32) (result i32)
    (i32.load (local.get $a))))
